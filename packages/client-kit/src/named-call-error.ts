/**
 * Whether `error` is the call error class named `name` (`DocketClientError`,
 * `DocketWorkerError`): judged by its name and a numeric gRPC `code`, not
 * `instanceof`, so that it holds when two copies of a package share a
 * process.
 */
export function isNamedCallError(error: unknown, name: string): boolean {
  return (
    typeof error === 'object' &&
    error !== null &&
    (error as { name?: unknown }).name === name &&
    typeof (error as { code?: unknown }).code === 'number'
  );
}
