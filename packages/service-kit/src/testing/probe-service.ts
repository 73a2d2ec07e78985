import { create, createFileRegistry, type FileRegistry, type Message, type MessageInitShape } from '@bufbuild/protobuf';
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

const wkt = new Map([
  ['google/protobuf/timestamp.proto', file_google_protobuf_timestamp],
  ['google/protobuf/any.proto', file_google_protobuf_any],
]);

/** A registry of one proto3 file whose imports are well-known types. */
function proto3Registry(file: Omit<MessageInitShape<typeof FileDescriptorProtoSchema>, '$typeName' | 'syntax'>): FileRegistry {
  return createFileRegistry(create(FileDescriptorProtoSchema, { ...file, syntax: 'proto3' }), (name) => wkt.get(name));
}

/** A field whose JSON name is its name (every name here is one lowercase word). */
function field(name: string, number: number, type: Type, more: { typeName?: string; label?: Label } = {}) {
  return { name, number, type, label: Label.OPTIONAL, jsonName: name, ...more };
}

const probeRegistry = proto3Registry({
  name: 'docket/testing/v1/probe.proto',
  package: 'docket.testing.v1',
  dependency: ['google/protobuf/timestamp.proto'],
  messageType: [
    { name: 'ProbeRequest', field: [field('text', 1, Type.STRING), field('count', 2, Type.INT32)] },
    {
      name: 'ProbeReply',
      field: [field('text', 1, Type.STRING), field('sequence', 2, Type.INT32), field('at', 3, Type.MESSAGE, { typeName: '.google.protobuf.Timestamp' })],
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
        {
          name: 'Converse',
          inputType: '.docket.testing.v1.ProbeRequest',
          outputType: '.docket.testing.v1.ProbeReply',
          clientStreaming: true,
          serverStreaming: true,
        },
      ],
    },
  ],
});

const statusRegistry = proto3Registry({
  name: 'google/rpc/status.proto',
  package: 'google.rpc',
  dependency: ['google/protobuf/any.proto'],
  messageType: [
    {
      name: 'Status',
      field: [field('code', 1, Type.INT32), field('message', 2, Type.STRING), field('details', 3, Type.MESSAGE, { typeName: '.google.protobuf.Any', label: Label.REPEATED })],
    },
  ],
});

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

type ProbeMethod<Kind extends 'unary' | 'server_streaming' | 'bidi_streaming'> = {
  methodKind: Kind;
  input: typeof ProbeRequestSchema;
  output: typeof ProbeReplySchema;
};

/**
 * `docket.testing.v1.ProbeService`: Echo (unary), Count (server streaming),
 * Converse (bidirectional) and Unbuilt, which tests leave unimplemented on
 * purpose.
 */
export const ProbeService = probeRegistry.getService('docket.testing.v1.ProbeService') as GenService<{
  echo: ProbeMethod<'unary'>;
  count: ProbeMethod<'server_streaming'>;
  unbuilt: ProbeMethod<'unary'>;
  converse: ProbeMethod<'bidi_streaming'>;
}>;
