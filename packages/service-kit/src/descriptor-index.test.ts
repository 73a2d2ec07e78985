import { fromBinary } from '@bufbuild/protobuf';
import { FileDescriptorProtoSchema } from '@bufbuild/protobuf/wkt';
import { Health } from '@docket/proto/grpc/health/v1/health_pb.js';
import { describe, expect, it } from 'vitest';
import { createDescriptorIndex } from './descriptor-index.js';
import { ProbeService } from './testing/probe-service.js';

describe('createDescriptorIndex', () => {
  const index = createDescriptorIndex([ProbeService, Health]);
  const probeFile = 'docket/testing/v1/probe.proto';

  it('finds the file of services, methods, messages, fields, enums and enum values', () => {
    for (const symbol of [
      'docket.testing.v1.ProbeService',
      'docket.testing.v1.ProbeService.Echo',
      'docket.testing.v1.ProbeRequest',
      '.docket.testing.v1.ProbeRequest',
      'docket.testing.v1.ProbeReply.at',
      'docket.testing.v1.ProbeMood',
      'docket.testing.v1.PROBE_MOOD_CALM',
    ]) {
      expect(index.fileContainingSymbol(symbol)?.proto.name, symbol).toBe(probeFile);
    }
    expect(index.fileContainingSymbol('google.protobuf.Timestamp')?.proto.name).toBe(
      'google/protobuf/timestamp.proto',
    );
    expect(index.fileContainingSymbol('docket.testing.v1.Nope')).toBeUndefined();
  });

  it('sends a file with its imports once per stream, but always the file asked for', () => {
    const sent = new Set<string>();
    const file = index.fileByName(probeFile)!;
    const names = (bytes: Uint8Array[]) => bytes.map((b) => fromBinary(FileDescriptorProtoSchema, b).name);
    expect(names(index.serializeWithDependencies(file, sent))).toEqual([probeFile, 'google/protobuf/timestamp.proto']);
    expect(names(index.serializeWithDependencies(file, sent))).toEqual([probeFile]);
  });

  it('lists the services it indexes', () => {
    expect(index.serviceNames).toEqual(['docket.testing.v1.ProbeService', 'grpc.health.v1.Health']);
  });
});
