"""What the browser test measures on a page region, beyond presence: clipped text and contrast.

`readability(locator)` runs READABILITY_JS in the page on one element (the side panel, a
profile's output) and returns what a reader would trip over:

- `clipped`: elements whose own text does not fit their box (scrollWidth > clientWidth), or
  reaches past the region's right edge, and SVG text outside its drawing;
- `wrapped`: table headers whose text takes more than one line (`launche s`);
- `low_contrast`: text whose colour against its background (both as the browser computed them,
  alpha composited over the layers below, any CSS colour syntax resolved through a canvas) has a
  WCAG 2 contrast ratio under 4.5 (3 for large text);
- `overflow_x`: the region itself scrolls sideways.

Text inside a box that scrolls sideways (a code listing, a wide table's scroller) may extend
past the region's edge: it can be scrolled to.
"""

from __future__ import annotations

READABILITY_JS = r"""([root, exempt]) => {
  const canvas = document.createElement('canvas');
  canvas.width = canvas.height = 1;
  const ctx = canvas.getContext('2d', {willReadFrequently: true});
  const rgba = (css) => {  // any CSS colour (rgb(), color(srgb ...), color-mix) -> [r, g, b, a]
    ctx.clearRect(0, 0, 1, 1);
    ctx.fillStyle = '#000';
    ctx.fillStyle = css;
    ctx.fillRect(0, 0, 1, 1);
    const d = ctx.getImageData(0, 0, 1, 1).data;
    return [d[0], d[1], d[2], d[3] / 255];
  };
  const over = (top, below) => top.slice(0, 3).map((c, i) => c * top[3] + below[i] * (1 - top[3]))
    .concat([1]);
  const background = (el) => {  // the composited background behind el
    const layers = [];
    for (let e = el; e; e = e.parentElement) {
      const c = rgba(getComputedStyle(e).backgroundColor);
      if (c[3] > 0) { layers.push(c); if (c[3] >= 1) break; }
    }
    let bg = [255, 255, 255, 1];
    for (const layer of layers.reverse()) bg = over(layer, bg);
    return bg;
  };
  const luminance = (c) => {
    const [r, g, b] = c.slice(0, 3).map(v => { v /= 255;
      return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4); });
    return 0.2126 * r + 0.7152 * g + 0.0722 * b;
  };
  const ratio = (a, b) => { const [x, y] = [luminance(a), luminance(b)].sort((p, q) => q - p);
    return (x + 0.05) / (y + 0.05); };
  const ownText = (el) => [...el.childNodes].filter(n => n.nodeType === 3)
    .map(n => n.textContent).join('').trim();
  const visible = (el) => el.getClientRects().length > 0 &&
    getComputedStyle(el).visibility !== 'hidden';
  const box = root.getBoundingClientRect();
  const out = {clipped: [], wrapped: [], low_contrast: [], checked: 0,
               overflow_x: root.scrollWidth > root.clientWidth + 1,
               width: Math.round(box.width)};
  for (const el of root.querySelectorAll('*')) {
    const text = ownText(el);
    if (!text || !visible(el) || el.closest('details:not([open]) > :not(summary)')) continue;
    const cs = getComputedStyle(el);
    out.checked += 1;
    const name = `${el.tagName.toLowerCase()}.${[...el.classList].join('.')}`;
    const svg = el.closest('svg');
    if (svg) {
      const b = el.getBoundingClientRect(), s = svg.getBoundingClientRect();
      if (b.left < s.left - 1 || b.right > s.right + 1 || b.top < s.top - 1 ||
          b.bottom > s.bottom + 1)
        out.clipped.push({el: name, text, why: 'outside its SVG'});
    } else {
      const display = cs.display;
      if (display !== 'inline' && el.clientWidth > 0 && el.scrollWidth > el.clientWidth + 1)
        out.clipped.push({el: name, text, scroll: el.scrollWidth, client: el.clientWidth});
      const right = el.getBoundingClientRect().right;
      let scroller = el.parentElement;  // text in a box that scrolls sideways can be reached
      while (scroller && scroller !== root &&
             !['auto', 'scroll'].includes(getComputedStyle(scroller).overflowX))
        scroller = scroller.parentElement;
      if ((!scroller || scroller === root) && right > box.right + 1)
        out.clipped.push({el: name, text, why: 'past the right edge', right, edge: box.right});
    }
    if (el.tagName === 'TH') {
      const range = document.createRange();
      range.selectNodeContents(el);
      const lines = new Set([...range.getClientRects()].map(r => Math.round(r.top)));
      if (lines.size > 1) out.wrapped.push({text, lines: lines.size});
    }
    if (exempt && el.matches(exempt)) continue;
    const colour = rgba(svg ? cs.fill : cs.color);
    const bg = background(svg || el);
    const fg = over(colour, bg);
    const size = parseFloat(cs.fontSize), bold = parseInt(cs.fontWeight, 10) >= 700;
    const need = size >= 24 || (bold && size >= 18.66) ? 3 : 4.5;
    const r = ratio(fg, bg);
    if (r < need)
      out.low_contrast.push({el: name, text: text.slice(0, 60), ratio: Math.round(r * 100) / 100,
                             colour: svg ? cs.fill : cs.color, background: bg.map(Math.round)});
  }
  return out;
}"""


# colours gpunb does not choose, left out of the contrast check (still checked for clipping):
# syntax tokens of code listings take JupyterLab's own editor colours (--jp-mirror-editor-*), as
# its code cells do, and ipywidgets' tab bar is JupyterLab's
NOT_OURS = ".gl span[class]:not(.ln):not(.note), .lm-TabBar *"


def readability(locator, exempt: str = NOT_OURS) -> dict:
    """READABILITY_JS's findings for the element `locator` points at (contrast not checked for
    elements matching `exempt`)."""
    return locator.evaluate(f"(root) => ({READABILITY_JS})([root, {exempt!r}])")


def assert_readable(found: dict, where: str) -> None:
    """Fail with what is unreadable, naming the region."""
    assert found["checked"] > 0, f"{where}: no text found to check"
    problems = {k: found[k] for k in ("clipped", "wrapped", "low_contrast") if found[k]}
    assert not problems and not found["overflow_x"], f"{where}: {problems or 'scrolls sideways'}"
