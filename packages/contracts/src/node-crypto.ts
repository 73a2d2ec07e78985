/** Node's crypto module where there is one (Node), undefined elsewhere (browsers). */
type NodeCrypto = typeof import('node:crypto');

/**
 * `node:crypto` when this code runs on Node, reached through
 * `process.getBuiltinModule` rather than a static import, so the package
 * loads in a browser bundle too (where hashing falls back to the portable
 * implementation). Internal.
 */
export const nodeCrypto: NodeCrypto | undefined = (
  globalThis as { process?: { getBuiltinModule?: (id: string) => unknown } }
).process?.getBuiltinModule?.('node:crypto') as NodeCrypto | undefined;

/** `node:crypto`, or an error saying that `what` needs Node. Internal. */
export function requireNodeCrypto(what: string): NodeCrypto {
  if (!nodeCrypto) throw new Error(`${what} needs Node's crypto module`);
  return nodeCrypto;
}
