import { create, fromBinary, toBinary, type DescService, type MessageInitShape } from '@bufbuild/protobuf';
import { Code, type ConnectRouter } from '@connectrpc/connect';
import {
  ServerReflection,
  ServerReflectionRequestSchema,
  ServerReflectionResponseSchema,
  type ServerReflectionRequest,
} from '@docket/proto/grpc/reflection/v1/reflection_pb.js';
import {
  ServerReflection as ServerReflectionV1alpha,
  ServerReflectionRequestSchema as RequestSchemaV1alpha,
  ServerReflectionResponseSchema as ResponseSchemaV1alpha,
} from '@docket/proto/grpc/reflection/v1alpha/reflection_pb.js';
import { createDescriptorIndex, type DescriptorIndex } from './descriptor-index.js';

type ReflectionResponseInit = MessageInitShape<typeof ServerReflectionResponseSchema>;

/**
 * Serves gRPC server reflection, `grpc.reflection.v1.ServerReflection` and
 * the older `grpc.reflection.v1alpha.ServerReflection` that many tools still
 * ask first, from the file descriptors of `services` and their transitive
 * imports: list_services, file_by_filename, file_containing_symbol,
 * file_containing_extension (always NOT_FOUND: Docket defines no
 * extensions) and all_extension_numbers_of_type (empty for a known message).
 * Lookup failures are answered in-stream with an error_response, as the
 * protocol requires; the stream itself stays open.
 *
 * @param services every service the server answers, including health and
 *   reflection themselves, so that reflection lists them too
 */
export function registerReflectionService(router: ConnectRouter, services: readonly DescService[]): void {
  const index = createDescriptorIndex([...services, ServerReflection, ServerReflectionV1alpha]);
  router.service(ServerReflection, {
    async *serverReflectionInfo(requests) {
      const sent = new Set<string>();
      for await (const request of requests) yield answer(index, request, sent);
    },
  });
  // v1alpha is wire-identical to v1: translate through the binary form.
  router.service(ServerReflectionV1alpha, {
    async *serverReflectionInfo(requests) {
      const sent = new Set<string>();
      for await (const request of requests) {
        const v1 = fromBinary(ServerReflectionRequestSchema, toBinary(RequestSchemaV1alpha, request));
        const response = create(ServerReflectionResponseSchema, answer(index, v1, sent));
        yield fromBinary(ResponseSchemaV1alpha, toBinary(ServerReflectionResponseSchema, response));
      }
    },
  });
}

function answer(index: DescriptorIndex, request: ServerReflectionRequest, sent: Set<string>): ReflectionResponseInit {
  const base = { validHost: request.host, originalRequest: request };
  const notFound = (what: string): ReflectionResponseInit => ({
    ...base,
    messageResponse: { case: 'errorResponse', value: { errorCode: Code.NotFound, errorMessage: `${what} not found` } },
  });
  const files = (file: Parameters<DescriptorIndex['serializeWithDependencies']>[0]): ReflectionResponseInit => ({
    ...base,
    messageResponse: {
      case: 'fileDescriptorResponse',
      value: { fileDescriptorProto: index.serializeWithDependencies(file, sent) },
    },
  });
  const message = request.messageRequest;
  switch (message.case) {
    case 'listServices':
      return {
        ...base,
        messageResponse: {
          case: 'listServicesResponse',
          value: { service: index.serviceNames.map((name) => ({ name })) },
        },
      };
    case 'fileByFilename': {
      const file = index.fileByName(message.value);
      return file ? files(file) : notFound('file');
    }
    case 'fileContainingSymbol': {
      const file = index.fileContainingSymbol(message.value);
      return file ? files(file) : notFound('symbol');
    }
    case 'fileContainingExtension':
      return notFound('extension');
    case 'allExtensionNumbersOfType':
      if (!index.hasMessage(message.value)) return notFound('type');
      return {
        ...base,
        messageResponse: {
          case: 'allExtensionNumbersResponse',
          value: { baseTypeName: message.value.replace(/^\./, ''), extensionNumber: [] },
        },
      };
    case undefined:
      return {
        ...base,
        messageResponse: {
          case: 'errorResponse',
          value: { errorCode: Code.InvalidArgument, errorMessage: 'empty reflection request' },
        },
      };
  }
}
