import { create, createFileRegistry, type Message } from '@bufbuild/protobuf';
import type { GenMessage, GenService } from '@bufbuild/protobuf/codegenv2';
import {
  FieldDescriptorProto_Label as Label,
  FieldDescriptorProto_Type as Type,
  FileDescriptorProtoSchema,
  file_google_protobuf_any,
  file_google_protobuf_timestamp,
  type Any,
  type Timestamp,
} from '@bufbuild/protobuf/wkt';

/*
 * Test-only descriptors built at runtime, so the kit's tests need no .proto
 * of their own: a small Docket-shaped service and google.rpc.Status (which
 * the repo does not vendor) for decoding grpc-status-details-bin by hand.
 */

const probeFile = create(FileDescriptorProtoSchema, {
  name: 'docket/testing/v1/probe.proto',
  package: 'docket.testing.v1',
  dependency: ['google/protobuf/timestamp.proto'],
  syntax: 'proto3',
  messageType: [
    {
      name: 'ProbeRequest',
      field: [
        { name: 'text', number: 1, type: Type.STRING, label: Label.OPTIONAL, jsonName: 'text' },
        { name: 'count', number: 2, type: Type.INT32, label: Label.OPTIONAL, jsonName: 'count' },
      ],
    },
    {
      name: 'ProbeReply',
      field: [
        { name: 'text', number: 1, type: Type.STRING, label: Label.OPTIONAL, jsonName: 'text' },
        { name: 'sequence', number: 2, type: Type.INT32, label: Label.OPTIONAL, jsonName: 'sequence' },
        {
          name: 'at',
          number: 3,
          type: Type.MESSAGE,
          typeName: '.google.protobuf.Timestamp',
          label: Label.OPTIONAL,
          jsonName: 'at',
        },
      ],
    },
  ],
  enumType: [
    {
      name: 'ProbeMood',
      value: [
        { name: 'PROBE_MOOD_UNSPECIFIED', number: 0 },
        { name: 'PROBE_MOOD_CALM', number: 1 },
      ],
    },
  ],
  service: [
    {
      name: 'ProbeService',
      method: [
        { name: 'Echo', inputType: '.docket.testing.v1.ProbeRequest', outputType: '.docket.testing.v1.ProbeReply' },
        {
          name: 'Count',
          inputType: '.docket.testing.v1.ProbeRequest',
          outputType: '.docket.testing.v1.ProbeReply',
          serverStreaming: true,
        },
        { name: 'Unbuilt', inputType: '.docket.testing.v1.ProbeRequest', outputType: '.docket.testing.v1.ProbeReply' },
      ],
    },
  ],
});

const statusFile = create(FileDescriptorProtoSchema, {
  name: 'google/rpc/status.proto',
  package: 'google.rpc',
  dependency: ['google/protobuf/any.proto'],
  syntax: 'proto3',
  messageType: [
    {
      name: 'Status',
      field: [
        { name: 'code', number: 1, type: Type.INT32, label: Label.OPTIONAL, jsonName: 'code' },
        { name: 'message', number: 2, type: Type.STRING, label: Label.OPTIONAL, jsonName: 'message' },
        {
          name: 'details',
          number: 3,
          type: Type.MESSAGE,
          typeName: '.google.protobuf.Any',
          label: Label.REPEATED,
          jsonName: 'details',
        },
      ],
    },
  ],
});

const wkt = new Map([
  ['google/protobuf/timestamp.proto', file_google_protobuf_timestamp],
  ['google/protobuf/any.proto', file_google_protobuf_any],
]);
const probeRegistry = createFileRegistry(probeFile, (name) => wkt.get(name));
const statusRegistry = createFileRegistry(statusFile, (name) => wkt.get(name));

/** docket.testing.v1.ProbeRequest */
export type ProbeRequest = Message<'docket.testing.v1.ProbeRequest'> & { text: string; count: number };
/** docket.testing.v1.ProbeReply */
export type ProbeReply = Message<'docket.testing.v1.ProbeReply'> & {
  text: string;
  sequence: number;
  at?: Timestamp;
};
/** google.rpc.Status */
export type RpcStatus = Message<'google.rpc.Status'> & { code: number; message: string; details: Any[] };

export const ProbeRequestSchema = probeRegistry.getMessage('docket.testing.v1.ProbeRequest') as GenMessage<ProbeRequest>;
export const ProbeReplySchema = probeRegistry.getMessage('docket.testing.v1.ProbeReply') as GenMessage<ProbeReply>;
export const RpcStatusSchema = statusRegistry.getMessage('google.rpc.Status') as GenMessage<RpcStatus>;

type ProbeMethod<Kind extends 'unary' | 'server_streaming'> = {
  methodKind: Kind;
  input: typeof ProbeRequestSchema;
  output: typeof ProbeReplySchema;
};

/**
 * `docket.testing.v1.ProbeService`: Echo (unary), Count (server streaming)
 * and Unbuilt, which tests leave unimplemented on purpose.
 */
export const ProbeService = probeRegistry.getService('docket.testing.v1.ProbeService') as GenService<{
  echo: ProbeMethod<'unary'>;
  count: ProbeMethod<'server_streaming'>;
  unbuilt: ProbeMethod<'unary'>;
}>;
