import { fromBinary, toBinary } from '@bufbuild/protobuf';
import { anyUnpack } from '@bufbuild/protobuf/wkt';
import * as grpc from '@grpc/grpc-js';
import { BadRequestSchema, ErrorInfoSchema } from '@docket/proto/google/rpc/error_details_pb.js';
import {
  ProbeReplySchema,
  ProbeRequestSchema,
  RpcStatusSchema,
  type ProbeReply,
  type ProbeRequest,
} from './probe-service.js';
import { create } from '@bufbuild/protobuf';

/** A failure as any client sees it, normalized so protocols can be compared. */
export interface SeenFailure {
  code: number;
  message: string;
  reason?: string;
  domain?: string;
  metadata?: Record<string, string>;
  violations: { field: string; description: string; reason: string }[];
}

/** A probe method as grpc-js describes one, its messages encoded with protobuf-es. */
function probeMethod<Streams extends boolean>(name: string, streams: Streams) {
  return {
    path: `/docket.testing.v1.ProbeService/${name}`,
    requestStream: streams,
    responseStream: streams,
    requestSerialize: (m: ProbeRequest) => Buffer.from(toBinary(ProbeRequestSchema, m)),
    requestDeserialize: (b: Buffer) => fromBinary(ProbeRequestSchema, b),
    responseSerialize: (m: ProbeReply) => Buffer.from(toBinary(ProbeReplySchema, m)),
    responseDeserialize: (b: Buffer) => fromBinary(ProbeReplySchema, b),
  };
}

const probeDefinition = {
  echo: probeMethod('Echo', false),
  converse: probeMethod('Converse', true),
} satisfies grpc.ServiceDefinition;

/**
 * The reference gRPC client (grpc-js) for the probe service, with errors
 * decoded from `grpc-status-details-bin` by hand (google.rpc.Status).
 */
export function grpcJsProbe(url: string) {
  const Client = grpc.makeGenericClientConstructor(probeDefinition, 'ProbeService');
  const client = new Client(new URL(url).host, grpc.credentials.createInsecure());
  return {
    client,
    echo(text: string, headers: Record<string, string> = {}, deadline?: Date): Promise<ProbeReply> {
      const metadata = new grpc.Metadata();
      for (const [key, value] of Object.entries(headers)) metadata.set(key, value);
      return new Promise((resolve, reject) => {
        client.makeUnaryRequest(
          probeDefinition.echo.path,
          probeDefinition.echo.requestSerialize,
          probeDefinition.echo.responseDeserialize,
          create(ProbeRequestSchema, { text }),
          metadata,
          deadline ? { deadline } : {},
          (error: grpc.ServiceError | null, reply?: ProbeReply) => (error ? reject(error) : resolve(reply!)),
        );
      });
    },
    /** A Converse call, written and read as the test goes. */
    converse(headers: Record<string, string> = {}): grpc.ClientDuplexStream<ProbeRequest, ProbeReply> {
      const metadata = new grpc.Metadata();
      for (const [key, value] of Object.entries(headers)) metadata.set(key, value);
      return client.makeBidiStreamRequest(probeDefinition.converse.path, probeDefinition.converse.requestSerialize, probeDefinition.converse.responseDeserialize, metadata);
    },
    close: () => client.close(),
  };
}

/** Decodes a grpc-js error, including its google.rpc.Status details. */
export function seenByGrpcJs(error: grpc.ServiceError): SeenFailure {
  const [bin] = error.metadata.get('grpc-status-details-bin');
  const status = bin instanceof Buffer ? fromBinary(RpcStatusSchema, bin) : undefined;
  const info = status?.details.map((any) => anyUnpack(any, ErrorInfoSchema)).find((x) => x !== undefined);
  const badRequest = status?.details.map((any) => anyUnpack(any, BadRequestSchema)).find((x) => x !== undefined);
  return {
    code: error.code,
    message: error.details,
    ...(info ? { reason: info.reason, domain: info.domain, metadata: { ...info.metadata } } : {}),
    violations: (badRequest?.fieldViolations ?? []).map((v) => ({
      field: v.field,
      description: v.description,
      reason: v.reason,
    })),
  };
}
