/** Attributes of {@link el}: strings and numbers become attributes, `false`/`undefined` omit them, `on*` functions become listeners. */
export type Attributes = Record<string, string | number | boolean | undefined | ((event: Event) => void)>;

/** A child of {@link el}: a node, or text (never parsed as HTML). */
export type Child = Node | string | number | false | null | undefined;

/**
 * Builds an element. Text children are text nodes, so no server-supplied
 * string (a job label, an event payload, an error message) is ever parsed
 * as markup.
 */
export function el<K extends keyof HTMLElementTagNameMap>(tag: K, attributes: Attributes = {}, ...children: Child[]): HTMLElementTagNameMap[K] {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) {
    if (typeof value === 'function') element.addEventListener(name.slice(2).toLowerCase(), value);
    else if (value === true) element.setAttribute(name, '');
    else if (value !== false && value !== undefined) element.setAttribute(name, String(value));
  }
  append(element, children);
  return element;
}

/** Appends `children` to `parent` (see {@link Child}). */
export function append(parent: Node, children: readonly Child[]): void {
  for (const child of children) {
    if (child === false || child === null || child === undefined) continue;
    parent.appendChild(typeof child === 'string' || typeof child === 'number' ? document.createTextNode(String(child)) : child);
  }
}

/** Replaces everything inside `parent` with `children`. */
export function replaceChildren(parent: Element, ...children: Child[]): void {
  parent.replaceChildren();
  append(parent, children);
}
