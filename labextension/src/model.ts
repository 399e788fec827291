/**
 * The side panel's data: cache events and launch timings received over the 'gpunb' comm.
 *
 * Plain data and pure functions only (no DOM), so the panel view stays a thin renderer.
 */

/** One message the Python side (gpunb/notebook/comm.py) sends. */
export interface IGpunbMessage {
  type: 'hello' | 'cache_events' | 'launches' | string;
  events?: Array<Record<string, unknown>>;
  launches?: ILaunchRecord[];
  version?: number;
}

export interface ILaunchRecord {
  kernel: string;
  grid: string;
  block: string;
  ms: number;
  compiled: boolean;
}

export interface ICacheRow {
  notebook: string;
  received: string;
  fn: string;
  signature: string;
  outcome: string;
  why: string;
  ms: string;
}

export interface ILaunchRow {
  notebook: string;
  kernel: string;
  launches: number;
  compiling: number;
  meanMs: string;
  minMs: string;
  maxMs: string;
}

const MAX_ROWS = 200;

function field(event: Record<string, unknown>, name: string): string {
  const value = event[name];
  return value === undefined || value === null ? '' : String(value);
}

/**
 * A cache event as one table row. The record is CacheEvent.to_json() (gpunb/foundation/events.py):
 * `outcome` is the one spelling gpunb uses everywhere ("hit (disk)", "miss (changed: scale)"),
 * `why` the first reason as a sentence.
 */
export function cacheRow(
  notebook: string,
  event: Record<string, unknown>,
  received: Date
): ICacheRow {
  const ms = Number(event['time_ms'] ?? 0) + Number(event['compile_ms'] ?? 0);
  return {
    notebook,
    received: received.toLocaleTimeString(),
    fn: field(event, 'function'),
    signature: field(event, 'signature'),
    outcome: field(event, 'outcome'),
    why: field(event, 'why'),
    ms: Number.isFinite(ms) ? ms.toFixed(1) : ''
  };
}

/** Launch records of one %%gpuprofile cell, summarised per kernel. */
export function launchRows(notebook: string, records: ILaunchRecord[]): ILaunchRow[] {
  const byKernel = new Map<string, ILaunchRecord[]>();
  for (const r of records) {
    const list = byKernel.get(r.kernel) ?? [];
    list.push(r);
    byKernel.set(r.kernel, list);
  }
  const rows: ILaunchRow[] = [];
  byKernel.forEach((list, kernel) => {
    const warm = list.filter(r => !r.compiled).map(r => r.ms);
    const mean = warm.length ? warm.reduce((a, b) => a + b, 0) / warm.length : NaN;
    rows.push({
      notebook,
      kernel,
      launches: list.length,
      compiling: list.length - warm.length,
      meanMs: warm.length ? mean.toFixed(3) : '',
      minMs: warm.length ? Math.min(...warm).toFixed(3) : '',
      maxMs: warm.length ? Math.max(...warm).toFixed(3) : ''
    });
  });
  return rows;
}

/** Everything the panel shows, newest first, bounded. */
export class PanelModel {
  cacheRows: ICacheRow[] = [];
  launchRows: ILaunchRow[] = [];
  connectedKernels = new Set<string>();
  private _listeners: Array<() => void> = [];

  onChange(listener: () => void): void {
    this._listeners.push(listener);
  }

  handle(notebook: string, message: IGpunbMessage, now: Date = new Date()): void {
    if (message.type === 'cache_events' && message.events) {
      const rows = message.events.map(e => cacheRow(notebook, e, now)).reverse();
      this.cacheRows = rows.concat(this.cacheRows).slice(0, MAX_ROWS);
    } else if (message.type === 'launches' && message.launches) {
      const rows = launchRows(notebook, message.launches);
      this.launchRows = rows.concat(this.launchRows).slice(0, MAX_ROWS);
    }
    this._listeners.forEach(listener => listener());
  }

  connected(kernelId: string): void {
    this.connectedKernels.add(kernelId);
    this._listeners.forEach(listener => listener());
  }
}
