/**
 * The side panel view: two tables (cache events, launch timings) rendered from PanelModel.
 */
import { Widget } from '@lumino/widgets';

import { PanelModel } from './model';

function cell(row: HTMLTableRowElement, text: string, className = ''): void {
  const td = document.createElement('td');
  td.textContent = text;
  if (className) {
    td.className = className;
  }
  row.appendChild(td);
}

function table(headers: string[]): HTMLTableElement {
  const t = document.createElement('table');
  const head = t.createTHead().insertRow();
  for (const h of headers) {
    const th = document.createElement('th');
    th.textContent = h;
    head.appendChild(th);
  }
  t.createTBody();
  return t;
}

export class PanelView extends Widget {
  constructor(private readonly model: PanelModel) {
    super();
    this.id = 'gpunb-panel';
    this.addClass('gpunb-panel');
    this.title.label = 'gpunb';
    this.title.caption = 'gpunb: cache events and launch timings';
    this.title.closable = true;
    model.onChange(() => this.render());
    this.render();
  }

  render(): void {
    const node = this.node;
    node.textContent = '';
    const status = document.createElement('div');
    status.className = 'gpunb-muted gpunb-status';
    const kernels = this.model.connectedKernels.size;
    status.textContent = kernels
      ? `connected to ${kernels} kernel(s)`
      : 'waiting for a kernel that ran %load_ext gpunb';
    node.appendChild(status);

    const h1 = document.createElement('h3');
    h1.textContent = 'Cache events';
    node.appendChild(h1);
    const events = table(['time', 'function', 'signature', 'event', 'why', 'ms']);
    events.classList.add('gpunb-cache-events');
    for (const r of this.model.cacheRows) {
      const row = events.tBodies[0].insertRow();
      cell(row, r.received);
      cell(row, r.fn);
      cell(row, r.signature);
      const css = r.outcome.startsWith('hit') ? 'gpunb-hit' : 'gpunb-miss';
      cell(row, r.outcome, css);
      cell(row, r.why);
      cell(row, r.ms);
    }
    node.appendChild(events);

    const h2 = document.createElement('h3');
    h2.textContent = 'Launches (%%gpuprofile)';
    node.appendChild(h2);
    const launches = table(['kernel', 'launches', 'compiling', 'mean ms', 'min', 'max']);
    launches.classList.add('gpunb-launches');
    for (const r of this.model.launchRows) {
      const row = launches.tBodies[0].insertRow();
      cell(row, r.kernel);
      cell(row, String(r.launches));
      cell(row, String(r.compiling));
      cell(row, r.meanMs);
      cell(row, r.minMs);
      cell(row, r.maxMs);
    }
    node.appendChild(launches);
  }
}
