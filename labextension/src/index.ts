/**
 * gpunb JupyterLab 4 extension: a right-side panel fed by the kernel's 'gpunb' comm.
 *
 * Every notebook's kernel connection registers the comm target 'gpunb'; the Python side
 * (gpunb/notebook/comm.py) opens it and sends cache events after each cell and launch timings
 * from %%gpuprofile. Only @lumino/widgets is imported at run time: the few JupyterLab
 * interfaces used are declared below, so the extension builds against any JupyterLab 4.
 */
import { Widget } from '@lumino/widgets';

import { IGpunbMessage, PanelModel } from './model';
import { PanelView } from './panel';

interface ISignalLike<T, A> {
  connect(slot: (sender: T, args: A) => void, thisArg?: unknown): boolean;
}

interface ICommMsg {
  content: { data: unknown };
}

interface IComm {
  onMsg: (msg: ICommMsg) => void | PromiseLike<void>;
  onClose: (msg: ICommMsg) => void | PromiseLike<void>;
}

interface IKernelConnection {
  id: string;
  registerCommTarget(
    targetName: string,
    callback: (comm: IComm, msg: ICommMsg) => void | PromiseLike<void>
  ): void;
}

interface ISessionContextLike {
  path?: string;
  session: { kernel: IKernelConnection | null } | null;
  kernelChanged: ISignalLike<unknown, unknown>;
}

interface IShellLike {
  add(widget: Widget, area?: string, options?: { rank?: number }): void;
  widgets(area?: string): Iterable<Widget>;
  currentChanged?: ISignalLike<unknown, unknown>;
  layoutModified?: ISignalLike<unknown, void>;
}

interface IAppLike {
  shell: IShellLike;
}

export const COMM_TARGET = 'gpunb';

/** Register the 'gpunb' comm target on a kernel connection (once per connection). */
function watchKernel(
  kernel: IKernelConnection | null | undefined,
  notebook: string,
  model: PanelModel,
  seen: WeakSet<object>
): void {
  if (!kernel || seen.has(kernel)) {
    return;
  }
  seen.add(kernel);
  kernel.registerCommTarget(COMM_TARGET, comm => {
    model.connected(kernel.id);
    comm.onMsg = msg => {
      model.handle(notebook, msg.content.data as IGpunbMessage);
    };
  });
}

/** Hook every notebook-like widget (anything with a sessionContext) in the main area. */
function scan(app: IAppLike, model: PanelModel, seen: WeakSet<object>): void {
  for (const widget of app.shell.widgets('main')) {
    const context = (widget as unknown as { sessionContext?: ISessionContextLike })
      .sessionContext;
    if (!context || seen.has(context)) {
      continue;
    }
    seen.add(context);
    const name = () => (context.path ?? widget.title.label).split('/').pop() ?? '';
    watchKernel(context.session?.kernel, name(), model, seen);
    context.kernelChanged.connect(() => {
      watchKernel(context.session?.kernel, name(), model, seen);
    });
  }
}

const plugin = {
  id: 'gpunb-labextension:panel',
  description: 'gpunb cache events and launch timings in a side panel',
  autoStart: true,
  activate: (app: IAppLike): void => {
    const model = new PanelModel();
    const view = new PanelView(model);
    app.shell.add(view, 'right', { rank: 900 });
    const seen = new WeakSet<object>();
    const rescan = () => scan(app, model, seen);
    app.shell.currentChanged?.connect(rescan);
    app.shell.layoutModified?.connect(rescan);
    rescan();
  }
};

export default plugin;
