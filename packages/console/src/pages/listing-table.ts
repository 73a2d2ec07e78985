import { el, replaceChildren, type Child } from '../dom.js';
import { refusalView } from './refusal-view.js';

/** A page that lists what it reads in one table (schedules, workers, queues): the parts its reads fill. */
export interface ListingTable {
  /** Says what was read and when, or `Reading ...` until the first read ends. */
  readonly note: HTMLElement;
  /** Where refusals are shown, as they happen (an assertive live region). */
  readonly problems: HTMLElement;
  /** Shows `rows`, or one row saying `empty` when there are none, and notes how many `noun`s were read at `readAt`. */
  show(rows: readonly HTMLTableRowElement[], noun: string, empty: string, readAt?: Date): void;
  /** A read was refused: the note says nothing, `problems` says why. */
  refused(what: string, error: unknown): void;
}

/** What a listing page shows above its rows. */
export interface ListingPage {
  /** Prefixes the ids of the note (`<id>-note`), the table (`<id>-table`) and its body (`<id>-rows`). */
  readonly id: string;
  readonly title: string;
  /** One line saying where the figures come from. */
  readonly help: string;
  /** Shown between the help line and the note (a form). */
  readonly controls?: Child;
  /** The table's column headings. */
  readonly columns: readonly string[];
}

/** Draws a listing page into `main`: its title, help line, controls, note, problems and table head. */
export function showListingTable(main: HTMLElement, page: ListingPage): ListingTable {
  const body = el('tbody', { id: `${page.id}-rows` });
  const note = el('p', { id: `${page.id}-note`, class: 'help', role: 'status' }, 'Reading ...');
  const problems = el('div', { 'aria-live': 'assertive' });
  replaceChildren(
    main,
    el('h1', {}, page.title),
    el('p', { class: 'help' }, page.help),
    page.controls,
    note,
    problems,
    el('table', { id: `${page.id}-table` }, el('thead', {}, el('tr', {}, ...page.columns.map((column) => el('th', { scope: 'col' }, column)))), body),
  );
  return {
    note,
    problems,
    show(rows, noun, empty, readAt = new Date()) {
      replaceChildren(body, ...rows);
      if (rows.length === 0) replaceChildren(body, el('tr', {}, el('td', { colspan: page.columns.length }, empty)));
      note.textContent = `${rows.length} ${noun}${rows.length === 1 ? '' : 's'}, read at ${readAt.toLocaleTimeString()}.`;
    },
    refused(what, error) {
      note.textContent = '';
      replaceChildren(problems, refusalView(what, error));
    },
  };
}
