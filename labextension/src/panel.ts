/**
 * The side panel view, rendered from PanelModel for the current notebook: its kernels (click one
 * to jump to its defining cell), cache events with their reasons, profiles (click the title to
 * jump to the cell that ran it), and a clear button.
 *
 * Made for the right sidebar's default width (about 250 px): every entry is a short card whose
 * first line holds what matters (a kernel's name and cache outcome, an event's outcome and time,
 * a profile's p50) and whose other lines wrap between words; the rest is on hover (title) or in
 * a <details> to expand. Nothing needs a horizontal scrollbar. Colours are JupyterLab's --jp-*
 * variables, so the light and dark themes both read.
 */
import { Widget } from '@lumino/widgets';

import {
  ICacheRow,
  ICellLink,
  IKernelRecord,
  IProfileRecord,
  NotebookState,
  PanelModel,
  num,
  percent,
  plural
} from './model';

export interface IPanelActions {
  /** Show the notebook's cell a record came from (a kernel's definition, a profile's cell). */
  jumpTo(notebook: string, link: ICellLink): void;
  /** Clear the panel and tell the kernel to forget its history. */
  clear(notebook: string): void;
}

function el<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  text = '',
  className = ''
): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag);
  if (text) {
    node.textContent = text;
  }
  if (className) {
    node.className = className;
  }
  return node;
}

function outcomeClass(outcome: string): string {
  if (outcome.startsWith('hit')) {
    return 'gpunb-hit';
  }
  return outcome.endsWith('failed') ? 'gpunb-bad' : 'gpunb-miss';
}

function bytes(value: number | null): string {
  return value === null || value === undefined ? '—' : `${value} B`;
}

/** Make `node` act as a link: click or Enter runs `go`. */
function linkTo(node: HTMLElement, go: () => void, label: string): void {
  node.classList.add('gpunb-link');
  node.tabIndex = 0;
  node.setAttribute('role', 'link');
  node.setAttribute('aria-label', label);
  node.onclick = go;
  node.onkeydown = (e: KeyboardEvent) => {
    if (e.key === 'Enter') {
      go();
    }
  };
}

/** A `name value` pair of a card's figures line. */
function figure(value: string, name: string, title = '', className = ''): HTMLElement {
  const node = el('span', '', `gpunb-figure ${className}`.trim());
  node.appendChild(el('b', value));
  node.appendChild(document.createTextNode(` ${name}`));
  if (title) {
    node.title = title;
  }
  return node;
}

export class PanelView extends Widget {
  constructor(
    private readonly model: PanelModel,
    private readonly actions: IPanelActions
  ) {
    super();
    this.id = 'gpunb-panel';
    this.addClass('gpunb-panel');
    this.title.label = 'gpunb';
    this.title.caption = 'gpunb: kernels, cache events and profiles of this notebook';
    this.title.closable = true;
    model.onChange(() => this.render());
    this.render();
  }

  render(): void {
    const node = this.node;
    node.textContent = '';
    const notebook = this.model.current;
    const state = notebook ? this.model.state(notebook) : null;

    const bar = el('div', '', 'gpunb-bar');
    const status = el('div', '', 'gpunb-muted gpunb-status');
    status.textContent =
      state && state.connected
        ? `${notebook}: connected to its kernel`
        : 'waiting for a kernel that ran %load_ext gpunb';
    bar.appendChild(status);
    const clear = el('button', 'Clear', 'gpunb-clear jp-mod-styled');
    clear.title = "Clear this notebook's kernels, events and profiles";
    clear.disabled = !notebook;
    clear.onclick = () => {
      if (notebook) {
        this.actions.clear(notebook);
      }
    };
    bar.appendChild(clear);
    node.appendChild(bar);
    if (!state) {
      return;
    }
    this.renderKernels(node, notebook, state);
    this.renderProfiles(node, notebook, state);
    this.renderEvents(node, state);
  }

  private section(node: HTMLElement, title: string, className: string): HTMLElement {
    node.appendChild(el('h3', title));
    const list = el('div', '', `gpunb-list ${className}`);
    node.appendChild(list);
    return list;
  }

  private renderKernels(node: HTMLElement, notebook: string, state: NotebookState): void {
    const list = this.section(node, 'Kernels', 'gpunb-kernels');
    const kernels = Array.from(state.kernels.values()).reverse();
    for (const k of kernels) {
      list.appendChild(this.kernelCard(notebook, k));
    }
    if (!kernels.length) {
      list.appendChild(el('div', 'no kernel compiled yet', 'gpunb-muted'));
    }
  }

  private kernelCard(notebook: string, k: IKernelRecord): HTMLElement {
    const card = el('div', '', 'gpunb-card gpunb-kernel-row');
    card.title =
      `${k.name} ${k.signature} on ${k.target}` +
      (k.arch ? `, resources for ${k.arch}` : '') +
      `\ndefined at ${k.defined_at} (click to show the cell)` +
      (k.limiter ? `\noccupancy at block ${k.block}, limited by ${k.limiter}` : '') +
      (k.compile_ms ? `\ncompiled in ${k.compile_ms.toFixed(0)} ms` : '') +
      (k.why ? `\n${k.why}` : '') +
      (k.problem && k.problem !== k.why ? `\n${k.problem}` : '');
    linkTo(card, () => this.actions.jumpTo(notebook, k), `${k.name}: show its cell`);
    const head = el('div', '', 'gpunb-card-head');
    head.appendChild(el('span', k.name, 'gpunb-strong gpunb-name'));
    head.appendChild(el('span', k.cache, `gpunb-outcome ${outcomeClass(k.cache)}`));
    card.appendChild(head);
    card.appendChild(el('div', k.signature, 'gpunb-muted gpunb-small gpunb-code gpunb-sig'));
    if (k.registers !== null && k.registers !== undefined) {
      const figures = el('div', '', 'gpunb-figures');
      figures.appendChild(figure(String(k.registers), 'regs', 'registers per thread'));
      figures.appendChild(
        figure(bytes(k.local_bytes), 'spill', 'local memory per thread (spills)',
          k.local_bytes ? 'gpunb-miss' : '')
      );
      figures.appendChild(figure(bytes(k.shared_bytes), 'smem', 'static shared memory per block'));
      figures.appendChild(
        figure(percent(k.occupancy), 'occ',
          k.limiter ? `theoretical occupancy at block ${k.block}, limited by ${k.limiter}` : '')
      );
      card.appendChild(figures);
    } else if (k.note) {
      card.appendChild(el('div', k.note, 'gpunb-muted gpunb-small gpunb-note'));
    }
    if (k.problem && !k.registers) {
      card.appendChild(el('div', k.problem, 'gpunb-why gpunb-small'));
    }
    card.appendChild(el('div', k.defined_at, 'gpunb-muted gpunb-small gpunb-where'));
    return card;
  }

  private renderEvents(node: HTMLElement, state: NotebookState): void {
    const list = this.section(node, 'Cache events', 'gpunb-cache-events');
    for (const r of state.cacheRows) {
      list.appendChild(this.eventCard(r));
    }
    if (!state.cacheRows.length) {
      list.appendChild(el('div', 'none yet', 'gpunb-muted'));
    }
  }

  private eventCard(r: ICacheRow): HTMLElement {
    const card = el('div', '', 'gpunb-card gpunb-event-row');
    card.title = `${r.received}: ${r.fn} ${r.signature}\n${r.outcome}${
      r.why ? ` - ${r.why}` : ''
    }\n${r.ms} ms (lookup and compile)${r.definedAt ? `\ndefined at ${r.definedAt}` : ''}`;
    const head = el('div', '', 'gpunb-card-head');
    head.appendChild(el('span', r.outcome, `gpunb-outcome ${outcomeClass(r.outcome)}`));
    head.appendChild(el('span', r.ms ? `${r.ms} ms` : '', 'gpunb-ms'));
    card.appendChild(head);
    const what = el('div', '', 'gpunb-small');
    what.appendChild(el('span', r.fn, 'gpunb-strong'));
    what.appendChild(el('span', ` ${r.signature}`, 'gpunb-muted gpunb-code gpunb-sig'));
    card.appendChild(what);
    if (r.why) {
      card.appendChild(el('div', r.why, 'gpunb-why gpunb-small'));
    }
    return card;
  }

  private renderProfiles(node: HTMLElement, notebook: string, state: NotebookState): void {
    const list = this.section(node, 'Profiles', 'gpunb-profiles');
    if (!state.profiles.length) {
      list.appendChild(
        el('div', 'none yet: run a %%gpuprofile cell or a with gpunb.profile() block',
          'gpunb-muted')
      );
      return;
    }
    for (const p of state.profiles) {
      list.appendChild(this.profileCard(notebook, p));
    }
  }

  private profileCard(notebook: string, p: IProfileRecord): HTMLElement {
    const card = el('div', '', 'gpunb-card gpunb-profile');
    const head = el('div', '', 'gpunb-card-head');
    const title = el('span', p.title || 'profile', 'gpunb-strong');
    if (p.cell_id || (p.cell !== null && p.cell !== undefined)) {
      linkTo(title, () => this.actions.jumpTo(notebook, p), `${p.title}: show its cell`);
      title.title = 'show the cell that ran this profile';
    }
    head.appendChild(title);
    head.appendChild(el('span', [p.target, p.timing].filter(Boolean).join(' · '),
      'gpunb-muted gpunb-small'));
    card.appendChild(head);
    if (p.note) {
      card.appendChild(el('div', p.note, 'gpunb-muted gpunb-small gpunb-note'));
    }
    // the columns that matter first (kernel, p50, GB/s); the rest when expanded
    for (const k of p.kernels ?? []) {
      const row = el('div', '', 'gpunb-profile-kernel');
      const name = String(k['kernel'] ?? '');
      const launches = Number(k['launches'] ?? 0);
      const top = el('div', '', 'gpunb-card-head');
      top.appendChild(el('span', name, 'gpunb-strong gpunb-name'));
      const gbps = num(k['achieved_gbps'], 1);
      top.appendChild(
        el('span', `${num(k['p50_ms'], 3)} ms${gbps === '—' ? '' : ` · ${gbps} GB/s`}`,
          'gpunb-ms')
      );
      row.appendChild(top);
      const more = el('details', '', 'gpunb-small');
      more.appendChild(el('summary', `${plural(launches, 'launch')}, details`));
      const occupancy = k['occupancy'];
      const occNote = String(k['occupancy_note'] ?? '');
      const lines: Array<[string, string]> = [
        ['p50 / min / max', `${num(k['p50_ms'], 4)} / ${num(k['min_ms'], 4)} / ${num(k['max_ms'], 4)} ms`],
        ['total', `${num(k['total_ms'], 4)} ms`],
        ['GB/s', `${gbps} (${num(k['pct_of_peak'], 1)} % of peak)`],
        ['GFLOP/s', num(k['gflops'], 1)],
        ['occupancy', occupancy === null || occupancy === undefined
          ? (occNote || '—')
          : `${percent(Number(occupancy))}${occNote ? ` (${occNote})` : ''}`],
        ['defined at', String(k['defined_at'] ?? '') || '—']
      ];
      const dl = el('dl', '', 'gpunb-details');
      for (const [term, value] of lines) {
        dl.appendChild(el('dt', term));
        dl.appendChild(el('dd', value));
      }
      more.appendChild(dl);
      row.appendChild(more);
      card.appendChild(row);
    }
    return card;
  }
}
