/**
 * gpunb JupyterLab 4 extension: a right-side panel fed by the kernel's 'gpunb' comm.
 *
 * Every notebook's kernel connection registers the comm target 'gpunb' and opens a comm of that
 * target itself; the Python side (gpunb/notebook/comm.py, whose docstring is the message schema)
 * sends a snapshot on open, then kernels, cache events and profiles after each cell. Only
 * @lumino/widgets is imported at run time: the few JupyterLab interfaces used are declared below,
 * so the extension builds against any JupyterLab 4.
 */
import { Widget } from '@lumino/widgets';

import { ICellLink, IGpunbMessage, PanelModel } from './model';
import { PanelView } from './panel';

interface ISignalLike<T, A> {
  connect(slot: (sender: T, args: A) => void, thisArg?: unknown): boolean;
}

interface ICommMsg {
  content: { data: unknown };
}

interface IComm {
  commId?: string;
  isDisposed?: boolean;
  onMsg: (msg: ICommMsg) => void | PromiseLike<void>;
  onClose: (msg: ICommMsg) => void | PromiseLike<void>;
  open?(data?: unknown): unknown;
  send?(data: unknown): unknown;
}

interface IKernelConnection {
  id: string;
  registerCommTarget(
    targetName: string,
    callback: (comm: IComm, msg: ICommMsg) => void | PromiseLike<void>
  ): void;
  createComm?(targetName: string, commId?: string): IComm;
  statusChanged?: ISignalLike<unknown, string>;
}

interface ISessionContextLike {
  path?: string;
  session: { kernel: IKernelConnection | null } | null;
  kernelChanged: ISignalLike<unknown, unknown>;
}

interface ICellLike {
  model: { id: string; executionCount?: number | null; type?: string };
  node: HTMLElement;
}

interface INotebookLike {
  widgets: ReadonlyArray<ICellLike>;
  activeCellIndex: number;
  scrollToCell?(cell: ICellLike): unknown;
}

interface IShellLike {
  add(widget: Widget, area?: string, options?: { rank?: number }): void;
  widgets(area?: string): Iterable<Widget>;
  activateById?(id: string): void;
  currentWidget?: Widget | null;
  currentChanged?: ISignalLike<unknown, unknown>;
  layoutModified?: ISignalLike<unknown, void>;
}

interface IAppLike {
  shell: IShellLike;
}

export const COMM_TARGET = 'gpunb';

/** What the plugin keeps per notebook: its widget (to jump to cells) and its comms. */
interface INotebookEntry {
  widget: Widget;
  comms: Set<IComm>;
}

class Connections {
  readonly notebooks = new Map<string, INotebookEntry>();
  private readonly _seen = new WeakSet<object>();

  constructor(private readonly model: PanelModel) {}

  entry(notebook: string, widget: Widget): INotebookEntry {
    let found = this.notebooks.get(notebook);
    if (!found) {
      found = { widget, comms: new Set() };
      this.notebooks.set(notebook, found);
    }
    found.widget = widget;
    return found;
  }

  private attach(notebook: string, entry: INotebookEntry, comm: IComm): void {
    entry.comms.add(comm);
    comm.onMsg = msg => {
      this.model.handle(notebook, msg.content.data as IGpunbMessage);
    };
    comm.onClose = () => {
      entry.comms.delete(comm);
    };
  }

  /**
   * A kernel connection of a notebook: accept the comms the kernel opens (first %load_ext gpunb),
   * and open one ourselves, which a kernel that already loaded gpunb answers with a snapshot
   * (page reload, or a notebook opened on a kernel started earlier); one that has not closes it.
   */
  watchKernel(kernel: IKernelConnection | null | undefined, notebook: string, widget: Widget): void {
    if (!kernel || this._seen.has(kernel)) {
      return;
    }
    this._seen.add(kernel);
    const entry = this.entry(notebook, widget);
    kernel.registerCommTarget(COMM_TARGET, comm => {
      this.model.connected(notebook);
      this.attach(notebook, entry, comm);
      // tell the kernel a panel listens (it then sends kernel records) and ask for a snapshot
      try {
        comm.send?.({ type: 'hello' });
      } catch (err) {
        console.debug('gpunb: hello failed', err);
      }
    });
    kernel.statusChanged?.connect((_sender, status) => {
      if (status === 'restarting' || status === 'autorestarting') {
        entry.comms.clear();
        this.model.clear(notebook);
      }
    });
    if (kernel.createComm) {
      try {
        const comm = kernel.createComm(COMM_TARGET);
        this.attach(notebook, entry, comm);
        void Promise.resolve(comm.open?.({ type: 'hello' })).catch(() => {
          entry.comms.delete(comm);
        });
      } catch (err) {
        console.debug('gpunb: could not open a comm to the kernel', err);
      }
    }
  }

  /** Hook every notebook-like widget (anything with a sessionContext) in the main area. */
  scan(app: IAppLike): void {
    for (const widget of app.shell.widgets('main')) {
      const context = (widget as unknown as { sessionContext?: ISessionContextLike })
        .sessionContext;
      if (!context) {
        continue;
      }
      const name = () => context.path ?? widget.title.label;
      if (this._seen.has(context)) {
        this.entry(name(), widget);
        continue;
      }
      this._seen.add(context);
      this.watchKernel(context.session?.kernel, name(), widget);
      context.kernelChanged.connect(() => {
        this.watchKernel(context.session?.kernel, name(), widget);
      });
    }
    const current = app.shell.currentWidget as unknown as
      | { sessionContext?: ISessionContextLike; title: { label: string } }
      | null
      | undefined;
    if (current && current.sessionContext) {
      this.model.setCurrent(current.sessionContext.path ?? current.title.label);
    }
  }

  send(notebook: string, data: unknown): void {
    for (const comm of this.notebooks.get(notebook)?.comms ?? []) {
      try {
        comm.send?.(data);
      } catch (err) {
        console.debug('gpunb: send failed', err);
      }
    }
  }
}

/** The cell a record links to (a kernel's definition, a profile's cell): by JupyterLab cell
 * id, else by execution count. */
export function findCell(cells: ReadonlyArray<ICellLike>, link: ICellLink): number {
  if (link.cell_id) {
    const byId = cells.findIndex(c => c.model.id === link.cell_id);
    if (byId >= 0) {
      return byId;
    }
  }
  if (link.cell !== null && link.cell !== undefined) {
    return cells.findIndex(c => c.model.executionCount === link.cell);
  }
  return -1;
}

const plugin = {
  id: 'gpunb-labextension:panel',
  description: 'gpunb kernels, cache events and profiles of the current notebook in a side panel',
  autoStart: true,
  activate: (app: IAppLike): void => {
    const model = new PanelModel();
    const connections = new Connections(model);
    const view = new PanelView(model, {
      jumpTo: (notebook, link) => {
        const entry = connections.notebooks.get(notebook);
        if (!entry) {
          return;
        }
        app.shell.activateById?.(entry.widget.id);
        const content = (entry.widget as unknown as { content?: INotebookLike }).content;
        if (!content) {
          return;
        }
        const index = findCell(content.widgets, link);
        if (index < 0) {
          return;
        }
        content.activeCellIndex = index;
        const target = content.widgets[index];
        void Promise.resolve(content.scrollToCell?.(target)).then(() => {
          target.node.scrollIntoView({ block: 'center' });
          target.node.classList.add('gpunb-flash');
          setTimeout(() => target.node.classList.remove('gpunb-flash'), 1500);
        });
      },
      clear: notebook => {
        model.clear(notebook);
        connections.send(notebook, { type: 'clear' });
      }
    });
    app.shell.add(view, 'right', { rank: 900 });
    const rescan = () => connections.scan(app);
    app.shell.currentChanged?.connect(rescan);
    app.shell.layoutModified?.connect(rescan);
    rescan();
  }
};

export default plugin;
