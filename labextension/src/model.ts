/**
 * The side panel's data, per notebook: kernels, cache events, profiles and launch timings
 * received over the 'gpunb' comm.
 *
 * The message schema is documented in one place: the docstring of gpunb/notebook/comm.py
 * (version 2). Plain data and pure functions only (no DOM), so the view stays a thin renderer.
 */

/** One message the Python side sends. */
export interface IGpunbMessage {
  type:
    | 'hello'
    | 'snapshot'
    | 'cache_events'
    | 'kernels'
    | 'launches'
    | 'profile'
    | 'cleared'
    | string;
  version?: number;
  events?: Array<Record<string, unknown>>;
  kernels?: IKernelRecord[];
  launches?: Array<ILaunchSummary | ILaunchRecord>;
  profiles?: IProfileRecord[];
  profile?: IProfileRecord;
}

/** Record K: one kernel specialisation defined in the notebook. */
export interface IKernelRecord {
  id: string;
  name: string;
  signature: string;
  target: string;
  arch: string;
  registers: number | null;
  local_bytes: number | null;
  shared_bytes: number | null;
  occupancy: number | null;
  limiter: string;
  block: number;
  cache: string;
  why: string;
  compile_ms: number;
  defined_at: string;
  cell: number | null;
  cell_id: string | null;
  problem?: string;
  /** Why the resources are absent (the CPU target has no registers or occupancy). */
  note?: string;
}

/** Where a record came from: the cell to jump to (by JupyterLab cell id, else count). */
export interface ICellLink {
  cell?: number | null;
  cell_id?: string | null;
}

/** Record L: one kernel's launches in a %%gpuprofile cell (schema version 3). */
export interface ILaunchSummary {
  kernel: string;
  launches: number;
  /** Launches that compiled or loaded the kernel: their time is not the kernel's. */
  compiling: number;
  mean_ms: number | null;
  min_ms: number | null;
  max_ms: number | null;
}

/** Version 2's record L: one launch (an older gpunb's kernel sends these). */
export interface ILaunchRecord {
  kernel: string;
  grid?: string;
  block?: string;
  ms: number;
  compiled: boolean;
}

/** Record P: one finished profile, linked to the cell it ran in. */
export interface IProfileRecord extends ICellLink {
  title?: string;
  target?: string;
  timing?: string;
  note?: string;
  kernels?: Array<Record<string, unknown>>;
}

export interface ICacheRow {
  received: string;
  fn: string;
  signature: string;
  outcome: string;
  why: string;
  ms: string;
  definedAt: string;
}

export interface ILaunchRow {
  kernel: string;
  launches: number;
  compiling: number;
  meanMs: string;
  minMs: string;
  maxMs: string;
}

const MAX_ROWS = 200; // cache events and launch rows kept per notebook
const MAX_KERNELS = 500; // kernel records kept per notebook: the newest
const MAX_PROFILES = 20;

function field(event: Record<string, unknown>, name: string): string {
  const value = event[name];
  return value === undefined || value === null ? '' : String(value);
}

/**
 * A cache event as one row. The record is CacheEvent.to_json(): `outcome` is the one spelling
 * gpunb uses everywhere ("hit (disk)", "miss (changed: scale)"), `why` the first reason.
 */
export function cacheRow(event: Record<string, unknown>, received: Date): ICacheRow {
  const ms = Number(event['time_ms'] ?? 0) + Number(event['compile_ms'] ?? 0);
  const stamp = Number(event['timestamp'] ?? 0);
  const when = stamp > 0 ? new Date(stamp * 1000) : received;
  return {
    received: when.toLocaleTimeString(),
    fn: field(event, 'function'),
    signature: field(event, 'signature'),
    outcome: field(event, 'outcome'),
    why: field(event, 'why'),
    ms: Number.isFinite(ms) ? ms.toFixed(1) : '',
    definedAt: field(event, 'defined_at')
  };
}

interface ILaunchTotals {
  launches: number;
  compiling: number;
  timed: number;
  totalMs: number;
  minMs: number;
  maxMs: number;
}

function isSummary(r: ILaunchSummary | ILaunchRecord): r is ILaunchSummary {
  return typeof (r as ILaunchSummary).launches === 'number';
}

/**
 * One %%gpuprofile cell's launches, one row per kernel: from per-kernel summaries (version 3)
 * or per-launch records (version 2). One loop, no spread of a list into Math.min: a cell can
 * launch a kernel hundreds of thousands of times.
 */
export function launchRows(records: Array<ILaunchSummary | ILaunchRecord>): ILaunchRow[] {
  const byKernel = new Map<string, ILaunchTotals>();
  for (const r of records) {
    let t = byKernel.get(r.kernel);
    if (!t) {
      t = { launches: 0, compiling: 0, timed: 0, totalMs: 0, minMs: Infinity, maxMs: -Infinity };
      byKernel.set(r.kernel, t);
    }
    if (isSummary(r)) {
      const timed = r.mean_ms === null ? 0 : r.launches - r.compiling;
      t.launches += r.launches;
      t.compiling += r.compiling;
      t.timed += timed;
      t.totalMs += timed * Number(r.mean_ms ?? 0);
      t.minMs = Math.min(t.minMs, r.min_ms ?? Infinity);
      t.maxMs = Math.max(t.maxMs, r.max_ms ?? -Infinity);
    } else {
      t.launches += 1;
      if (r.compiled) {
        t.compiling += 1;
      } else {
        t.timed += 1;
        t.totalMs += r.ms;
        t.minMs = Math.min(t.minMs, r.ms);
        t.maxMs = Math.max(t.maxMs, r.ms);
      }
    }
  }
  const rows: ILaunchRow[] = [];
  byKernel.forEach((t, kernel) => {
    const timed = t.timed > 0;
    rows.push({
      kernel,
      launches: t.launches,
      compiling: t.compiling,
      meanMs: timed ? (t.totalMs / t.timed).toFixed(3) : '',
      minMs: timed ? t.minMs.toFixed(3) : '',
      maxMs: timed ? t.maxMs.toFixed(3) : ''
    });
  });
  return rows;
}

/** A number with `digits` decimals, `—` when absent or not finite. */
export function num(value: unknown, digits: number): string {
  const v = Number(value);
  return value === undefined || value === null || !Number.isFinite(v) ? '—' : v.toFixed(digits);
}

/** `1 launch`, `3 launches`. */
export function plural(count: number, word: string): string {
  if (count === 1) {
    return `${count} ${word}`;
  }
  return /(s|sh|ch|x)$/.test(word) ? `${count} ${word}es` : `${count} ${word}s`;
}

/** `62 %` for 0.62, `—` when unknown. */
export function percent(fraction: number | null | undefined): string {
  return fraction === null || fraction === undefined || !Number.isFinite(fraction)
    ? '—'
    : `${Math.round(fraction * 100)} %`;
}

/** What the panel knows about one notebook's kernel. */
export class NotebookState {
  kernels = new Map<string, IKernelRecord>();
  cacheRows: ICacheRow[] = [];
  launchRows: ILaunchRow[] = [];
  profiles: IProfileRecord[] = [];
  connected = false;
  messages = 0;

  clear(): void {
    this.kernels.clear();
    this.cacheRows = [];
    this.launchRows = [];
    this.profiles = [];
  }
}

/** Everything the panel shows, per notebook path; newest first, bounded (MAX_ROWS, MAX_KERNELS,
 * MAX_PROFILES per notebook). */
export class PanelModel {
  notebooks = new Map<string, NotebookState>();
  current = '';
  private _listeners: Array<() => void> = [];

  onChange(listener: () => void): void {
    this._listeners.push(listener);
  }

  state(notebook: string): NotebookState {
    let found = this.notebooks.get(notebook);
    if (!found) {
      found = new NotebookState();
      this.notebooks.set(notebook, found);
    }
    return found;
  }

  /** The notebook whose data the panel shows (the current one, else the last active). */
  setCurrent(notebook: string): void {
    if (notebook && notebook !== this.current) {
      this.current = notebook;
      this._changed();
    }
  }

  handle(notebook: string, message: IGpunbMessage, now: Date = new Date()): void {
    const s = this.state(notebook);
    s.connected = true;
    s.messages += 1;
    if (!this.current) {
      this.current = notebook;
    }
    switch (message.type) {
      case 'snapshot':
        s.clear();
        this._addKernels(s, message.kernels ?? []);
        this._addEvents(s, message.events ?? [], now);
        s.profiles = (message.profiles ?? []).slice(-MAX_PROFILES).reverse();
        break;
      case 'cache_events':
        this._addEvents(s, message.events ?? [], now);
        break;
      case 'kernels':
        this._addKernels(s, message.kernels ?? []);
        break;
      case 'launches':
        s.launchRows = launchRows(message.launches ?? [])
          .concat(s.launchRows)
          .slice(0, MAX_ROWS);
        break;
      case 'profile':
        if (message.profile) {
          s.profiles = [message.profile].concat(s.profiles).slice(0, MAX_PROFILES);
        }
        break;
      case 'cleared':
        s.clear();
        break;
      default:
        break;
    }
    this._changed();
  }

  connected(notebook: string): void {
    this.state(notebook).connected = true;
    if (!this.current) {
      this.current = notebook;
    }
    this._changed();
  }

  clear(notebook: string): void {
    this.state(notebook).clear();
    this._changed();
  }

  private _addKernels(s: NotebookState, records: IKernelRecord[]): void {
    for (const k of records) {
      s.kernels.delete(k.id); // re-insert: newest last
      s.kernels.set(k.id, k);
    }
    for (const id of s.kernels.keys()) {
      if (s.kernels.size <= MAX_KERNELS) {
        break;
      }
      s.kernels.delete(id); // the oldest first (a Map iterates in insertion order)
    }
  }

  private _addEvents(
    s: NotebookState,
    events: Array<Record<string, unknown>>,
    now: Date
  ): void {
    const rows = events.map(e => cacheRow(e, now)).reverse();
    s.cacheRows = rows.concat(s.cacheRows).slice(0, MAX_ROWS);
  }

  private _changed(): void {
    this._listeners.forEach(listener => listener());
  }
}
