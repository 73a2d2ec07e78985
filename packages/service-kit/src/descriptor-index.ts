import { toBinary, type DescFile, type DescService } from '@bufbuild/protobuf';
import { nestedTypes } from '@bufbuild/protobuf/reflect';
import { FileDescriptorProtoSchema } from '@bufbuild/protobuf/wkt';

/**
 * The protobuf files behind a set of services, looked up the way gRPC server
 * reflection asks: by file name and by fully-qualified symbol.
 */
export interface DescriptorIndex {
  /** Fully-qualified names of the indexed services, sorted. */
  readonly serviceNames: readonly string[];
  /** The file called `name` (for example `grpc/health/v1/health.proto`). */
  fileByName(name: string): DescFile | undefined;
  /**
   * The file declaring `symbol`: a service, method, message, enum, enum
   * value, extension, or a field or oneof (answered with its message's file).
   */
  fileContainingSymbol(symbol: string): DescFile | undefined;
  /** Whether `typeName` names an indexed message. */
  hasMessage(typeName: string): boolean;
  /**
   * The serialized `FileDescriptorProto` of `file` followed by those of its
   * transitive dependencies that are not in `alreadySent` (which is
   * updated), as gRPC's own reflection servers answer: a client resolves
   * every import without asking twice on one stream.
   */
  serializeWithDependencies(file: DescFile, alreadySent: Set<string>): Uint8Array[];
}

/** Indexes the files declaring `services` and everything they import. */
export function createDescriptorIndex(services: readonly DescService[]): DescriptorIndex {
  const files = new Map<string, DescFile>();
  const visit = (file: DescFile): void => {
    if (files.has(fileName(file))) return;
    files.set(fileName(file), file);
    file.dependencies.forEach(visit);
  };
  services.forEach((service) => visit(service.file));

  const symbols = new Map<string, DescFile>();
  const messages = new Set<string>();
  for (const file of files.values()) {
    for (const type of nestedTypes(file)) {
      symbols.set(type.typeName, file);
      switch (type.kind) {
        case 'message':
          messages.add(type.typeName);
          for (const field of type.fields) symbols.set(`${type.typeName}.${field.name}`, file);
          for (const oneof of type.oneofs) symbols.set(`${type.typeName}.${oneof.name}`, file);
          break;
        case 'enum': {
          // Enum values are scoped as siblings of their enum (C++ scoping);
          // accept the enum-qualified spelling too.
          const scope = type.typeName.slice(0, Math.max(0, type.typeName.lastIndexOf('.')));
          for (const value of type.values) {
            symbols.set(scope ? `${scope}.${value.name}` : value.name, file);
            symbols.set(`${type.typeName}.${value.name}`, file);
          }
          break;
        }
        case 'service':
          for (const method of type.methods) symbols.set(`${type.typeName}.${method.name}`, file);
          break;
        case 'extension':
          break;
      }
    }
  }

  const serialized = new Map<string, Uint8Array>();
  const bytesOf = (file: DescFile): Uint8Array => {
    const name = fileName(file);
    let bytes = serialized.get(name);
    if (!bytes) {
      bytes = toBinary(FileDescriptorProtoSchema, file.proto);
      serialized.set(name, bytes);
    }
    return bytes;
  };

  return {
    serviceNames: [...new Set(services.map((s) => s.typeName))].sort(),
    fileByName: (name) => files.get(name),
    fileContainingSymbol: (symbol) => symbols.get(symbol.replace(/^\./, '')),
    hasMessage: (typeName) => messages.has(typeName.replace(/^\./, '')),
    serializeWithDependencies(file, alreadySent) {
      const out: Uint8Array[] = [];
      const queue: DescFile[] = [file];
      for (let current = queue.shift(); current; current = queue.shift()) {
        const name = fileName(current);
        if (out.length === 0 || !alreadySent.has(name)) {
          alreadySent.add(name);
          out.push(bytesOf(current));
          queue.push(...current.dependencies);
        }
      }
      return out;
    },
  };
}

/** The file's name as written in imports, with the `.proto` suffix. */
function fileName(file: DescFile): string {
  return file.proto.name;
}
