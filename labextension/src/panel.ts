/**
 * The side panel view, rendered from PanelModel for the current notebook: its kernels (click one
 * to jump to its defining cell), cache events with their reasons, profiles and %%gpuprofile
 * launch timings, and a clear button. Narrow by default (the right sidebar), so every section
 * is a compact table whose long text wraps; colours come from JupyterLab's --jp-* variables.
 */
import { Widget } from '@lumino/widgets';

import { IKernelRecord, NotebookState, PanelModel, percent } from './model';

export interface IPanelActions {
  /** Show the notebook's cell that defined this kernel. */
  jumpTo(notebook: string, kernel: IKernelRecord): void;
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

function cell(row: HTMLTableRowElement, text: string, className = '', title = ''): void {
  const td = el('td', text, className);
  if (title) {
    td.title = title;
  }
  row.appendChild(td);
}

function table(headers: string[], className: string): HTMLTableElement {
  const t = el('table', '', className);
  const head = t.createTHead().insertRow();
  for (const h of headers) {
    head.appendChild(el('th', h));
  }
  t.createTBody();
  return t;
}

function outcomeClass(outcome: string): string {
  return outcome.startsWith('hit') ? 'gpunb-hit' : 'gpunb-miss';
}

function bytes(value: number | null): string {
  return value === null || value === undefined ? '—' : `${value} B`;
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
    this.renderEvents(node, state);
    this.renderProfiles(node, state);
    this.renderLaunches(node, state);
  }

  private renderKernels(node: HTMLElement, notebook: string, state: NotebookState): void {
    node.appendChild(el('h3', 'Kernels'));
    // two rows per kernel (its name, then its numbers), so five columns fit a narrow sidebar
    const t = table(['regs', 'spill', 'smem', 'occ', 'cache'], 'gpunb-kernels');
    const kernels = Array.from(state.kernels.values()).reverse();
    for (const k of kernels) {
      const tip =
        `${k.name} ${k.signature} on ${k.target}` +
        (k.arch ? `, resources for ${k.arch}` : '') +
        `\ndefined at ${k.defined_at} (click to show the cell)` +
        (k.limiter ? `\noccupancy at block ${k.block}, limited by ${k.limiter}` : '') +
        (k.problem ? `\n${k.problem}` : '');
      const jump = () => this.actions.jumpTo(notebook, k);
      const head = t.tBodies[0].insertRow();
      head.className = 'gpunb-kernel-row gpunb-kernel-name';
      head.tabIndex = 0;
      head.title = tip;
      const name = el('td', '', 'gpunb-kname gpunb-wrap');
      name.colSpan = 5;
      name.appendChild(el('span', k.name, 'gpunb-strong'));
      name.appendChild(el('span', ` ${k.signature}`, 'gpunb-muted gpunb-small gpunb-code'));
      name.appendChild(el('div', k.defined_at, 'gpunb-muted gpunb-small'));
      head.appendChild(name);
      const row = t.tBodies[0].insertRow();
      row.className = 'gpunb-kernel-row gpunb-kernel-numbers';
      row.title = tip;
      cell(row, k.registers === null ? '—' : String(k.registers));
      cell(row, bytes(k.local_bytes), k.local_bytes ? 'gpunb-miss' : '');
      cell(row, bytes(k.shared_bytes));
      cell(row, percent(k.occupancy), '', k.limiter ? `limited by ${k.limiter}` : '');
      cell(row, k.cache, `${outcomeClass(k.cache)} gpunb-wrap`, k.why);
      for (const r of [head, row]) {
        r.onclick = jump;
        r.onkeydown = (e: KeyboardEvent) => {
          if (e.key === 'Enter') {
            jump();
          }
        };
      }
    }
    if (!kernels.length) {
      node.appendChild(el('div', 'no kernel compiled yet', 'gpunb-muted'));
    }
    node.appendChild(t);
  }

  private renderEvents(node: HTMLElement, state: NotebookState): void {
    node.appendChild(el('h3', 'Cache events'));
    const t = table(['time', 'kernel', 'event', 'ms'], 'gpunb-cache-events');
    for (const r of state.cacheRows) {
      const row = t.tBodies[0].insertRow();
      cell(row, r.received, 'gpunb-muted');
      const fn = el('td', '', 'gpunb-wrap');
      fn.appendChild(el('div', r.fn, 'gpunb-strong'));
      fn.appendChild(el('div', r.signature, 'gpunb-muted gpunb-small gpunb-code'));
      row.appendChild(fn);
      const what = el('td', '', 'gpunb-wrap');
      what.appendChild(el('div', r.outcome, outcomeClass(r.outcome)));
      if (r.why) {
        what.appendChild(el('div', r.why, 'gpunb-why gpunb-small'));
      }
      row.appendChild(what);
      cell(row, r.ms);
    }
    node.appendChild(t);
  }

  private renderProfiles(node: HTMLElement, state: NotebookState): void {
    node.appendChild(el('h3', 'Profiles'));
    if (!state.profiles.length) {
      node.appendChild(
        el('div', 'none yet: %%gpuprofile or with gpunb.profile()', 'gpunb-muted')
      );
      return;
    }
    for (const p of state.profiles) {
      const box = el('div', '', 'gpunb-profile');
      const timing = p.timing ? `${p.timing} timing` : '';
      box.appendChild(
        el('div', [p.title || 'profile', p.target, timing].filter(Boolean).join(' · '), 'gpunb-strong')
      );
      if (p.note) {
        box.appendChild(el('div', p.note, 'gpunb-muted gpunb-small'));
      }
      const t = table(['kernel', 'launches', 'p50 ms', 'total ms', 'GB/s'], 'gpunb-profile-table');
      for (const k of p.kernels ?? []) {
        const row = t.tBodies[0].insertRow();
        const num = (name: string, digits: number) => {
          const v = Number(k[name]);
          return k[name] === undefined || k[name] === null || !Number.isFinite(v)
            ? '—'
            : v.toFixed(digits);
        };
        cell(row, String(k['kernel'] ?? ''), 'gpunb-strong');
        cell(row, String(k['launches'] ?? ''));
        cell(row, num('p50_ms', 3));
        cell(row, num('total_ms', 3));
        cell(row, num('achieved_gbps', 1));
      }
      box.appendChild(t);
      node.appendChild(box);
    }
  }

  private renderLaunches(node: HTMLElement, state: NotebookState): void {
    node.appendChild(el('h3', 'Launches (%%gpuprofile)'));
    const t = table(['kernel', 'n', 'mean ms', 'min', 'max'], 'gpunb-launches');
    for (const r of state.launchRows) {
      const row = t.tBodies[0].insertRow();
      cell(row, r.kernel, 'gpunb-strong');
      cell(row, r.compiling ? `${r.launches} (${r.compiling} compiling)` : String(r.launches));
      cell(row, r.meanMs);
      cell(row, r.minMs);
      cell(row, r.maxMs);
    }
    node.appendChild(t);
  }
}
