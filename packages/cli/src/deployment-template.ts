/**
 * What the front's configuration files (deploy/nginx, deploy/haproxy) are
 * rendered with: the values that may reach them, checked, and a template
 * language of mustache's two simplest tags.
 */

/** Throws unless `path` is absolute and free of what a configuration file would read as syntax. */
export function checkPath(what: string, path: string): void {
  if (!path.startsWith('/') || /[\s;'"{}\\$#]/.test(path)) {
    throw new Error(`${what} must be an absolute path without spaces, quotes, braces, '$', '#' or ';' to appear in a configuration file: ${JSON.stringify(path)}`);
  }
}

/** Throws unless `address` is `host:port` (IPv4, name or bracketed IPv6) with a port from 1 to 65535. */
export function checkAddress(what: string, address: string): void {
  const match = /^(?:[A-Za-z0-9.-]+|\[[0-9A-Fa-f:]+\]):(\d{1,5})$/.exec(address);
  if (!match || Number(match[1]) < 1 || Number(match[1]) > 65_535) {
    throw new Error(`${what} must be host:port with a port from 1 to 65535, got ${JSON.stringify(address)}`);
  }
}

/** A value the template may name: text, or a list to repeat a section over. */
export type TemplateValue = string | readonly TemplateContext[];
export interface TemplateContext {
  readonly [key: string]: TemplateValue;
}

const TAG = /\{\{([#/]?)([A-Za-z0-9]+)\}\}/;

/**
 * Mustache's two forms and nothing else: `{{name}}` is the innermost
 * value of that name (a section's item first, then the ones around it),
 * `{{#name}}...{{/name}}` repeats its body per item of a list. A tag alone
 * on its line takes the line with it. A name that is not there, or is a
 * list where text is wanted (or the reverse), is an Error: a template and
 * its renderer that drift apart fail at once.
 */
export function renderTemplate(template: string, root: TemplateContext): string {
  const text = template.replace(/^[ \t]*(\{\{[#/][A-Za-z0-9]+\}\})[ \t]*\n/gm, '$1');
  return renderSection(text, [root]);
}

function renderSection(text: string, stack: readonly TemplateContext[]): string {
  let output = '';
  let at = 0;
  const tags = new RegExp(TAG.source, 'g');
  for (let tag = tags.exec(text); tag !== null; tag = tags.exec(text)) {
    const [whole, kind, name = ''] = tag;
    output += text.slice(at, tag.index);
    at = tag.index + whole.length;
    if (kind === '/') throw new Error(`the template closes {{/${name}}}, which is not open`);
    const value = lookUp(stack, name);
    if (kind === '#') {
      const end = closingTag(text, name, at);
      if (typeof value === 'string') throw new Error(`the template repeats {{#${name}}}, which is text`);
      const body = text.slice(at, end);
      for (const item of value) output += renderSection(body, [item, ...stack]);
      at = end + `{{/${name}}}`.length;
      tags.lastIndex = at;
      continue;
    }
    if (typeof value !== 'string') throw new Error(`the template writes {{${name}}}, which is a list`);
    output += value;
  }
  return output + text.slice(at);
}

function lookUp(stack: readonly TemplateContext[], name: string): TemplateValue {
  for (const context of stack) {
    const value = context[name];
    if (value !== undefined) return value;
  }
  throw new Error(`the template names {{${name}}}, which the renderer does not provide`);
}

/** Where the `{{/name}}` closing the section opened just before `from` starts (sections of one name may nest). */
function closingTag(text: string, name: string, from: number): number {
  let depth = 1;
  const tags = new RegExp(`\\{\\{([#/])${name}\\}\\}`, 'g');
  tags.lastIndex = from;
  for (let tag = tags.exec(text); tag !== null; tag = tags.exec(text)) {
    depth += tag[1] === '#' ? 1 : -1;
    if (depth === 0) return tag.index;
  }
  throw new Error(`the template never closes {{#${name}}}`);
}
