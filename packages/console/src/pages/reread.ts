/** Runs `read` now and `intervalMs` after each run finishes, until `signal` (leaving the page) aborts. */
export function repeatWhileShown(signal: AbortSignal, intervalMs: number, read: () => Promise<void>): void {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const again = async (): Promise<void> => {
    await read();
    if (!signal.aborted) timer = setTimeout(() => void again(), intervalMs);
  };
  signal.addEventListener('abort', () => clearTimeout(timer), { once: true });
  void again();
}
