"""Side-by-side Source | PTX (or SASS) listings whose lines are linked through the line map.

Hover linking is CSS only (`:has()` + `:hover`, one rule pair per mapped source line, scoped to
the view's id), so it works in any page. Clicking pins a line: its partner lines in the other pane
are highlighted and scrolled into view, and in the widget the source-line picker follows, so the
Python-side selection model (and the saved widget state) holds the pinned line. Scrolling one pane
scrolls the other to the partner of its first linked line ("sync scroll", on by default). The
pin, scroll sync, search and copy behaviour is a few lines of inline event-handler script
(PIN_JS): inline handlers are the only script that runs in an ipywidgets HTML view and in
nbconvert's page alike. A pinned selection rendered by Python (`sel` class) is scrolled into view
when the HTML is (re)drawn.
"""

from __future__ import annotations

from collections.abc import Iterable

from gpunb.notebook import render

HOVER = "color-mix(in srgb,var(--jp-brand-color1,#2196f3) 14%,transparent)"

# window.gpunbInsp: pin(event, view) for clicks, reveal(view) after a (re)draw, sync(pre) when a
# pane scrolls, find(input), copy(button). Installed once per page (per version: a page that
# drew an older gpunb's views gets this one) by the first view drawn (an <img> that fails to
# load is the one element whose handler runs when HTML is inserted).
PIN_JS = (
    "if(!window.gpunbInsp||gpunbInsp.v!==3)window.gpunbInsp={v:3,"
    "keep:{},"
    "set(pre,top){const b=pre.scrollTop;pre.scrollTop=top;"
    "if(pre.scrollTop!==b)pre._gpunbQuiet=Date.now();},"
    "pin(ev,v){const g=ev.target.closest('.gl[data-l]');if(!g||!v.contains(g))return;"
    "const l=g.dataset.l,on=g.classList.contains('pin');"
    "v.querySelectorAll('.gl.pin').forEach(e=>e.classList.remove('pin'));"
    "if(!on)v.querySelectorAll('.gl[data-l=\"'+l+'\"]').forEach(e=>e.classList.add('pin'));"
    "const pre=g.closest('pre');this.keep[v.id]={side:g.classList.contains('s')?'s':'t',"
    "top:pre?pre.scrollTop:0};this.reveal(v,pre);"
    "const w=v.closest('.gpunb-inspector'),sel=w&&w.querySelector('select'),"
    # a PTX line clicked in the widget: its number goes in the 'PTX line' box, whose change
    # selects the source line (Python's select_ptx_line); anything else goes through the picker
    "num=w&&v.id.endsWith('-ptx')&&g.classList.contains('t')&&"
    "w.querySelector('.gpunb-ptx-line input');"
    "if(num&&!on){num.value=g.querySelector('.ln').textContent;"
    "num.dispatchEvent(new Event('change',{bubbles:true}));}"
    "else if(sel){const i=[...sel.options].findIndex(o=>on?o.textContent==='\u2014':"
    "o.textContent.startsWith(l+':'));"
    "if(i>=0&&sel.selectedIndex!==i){sel.selectedIndex=i;"
    "sel.dispatchEvent(new Event('change',{bubbles:true}));}}},"
    "reveal(v,skip){const k=this.keep[v.id];"
    "v.querySelectorAll('pre.gpunb-code').forEach(pre=>{if(pre===skip)return;"
    "const side=pre.closest('[data-side]');"
    "if(!skip&&k&&side&&side.dataset.side===k.side){this.set(pre,k.top);return;}"
    "const f=pre.querySelector('.gl.pin')||pre.querySelector('.gl.sel');"
    "if(f)this.set(pre,Math.max(0,f.offsetTop-pre.clientHeight/3));});},"
    # free scrolling: the first linked line at the top of the scrolled pane brings its partner
    # in the other pane to the same height (a scroll this code made is not echoed back)
    "sync(pre){if(Date.now()-(pre._gpunbQuiet||0)<150)return;"
    "const v=pre.closest('.gpunb-split'),box=v&&v.querySelector('input.gpunb-sync');"
    "if(!v||(box&&!box.checked))return;"
    "const side=pre.closest('[data-side]').dataset.side,"
    "other=v.querySelector('[data-side=\"'+(side==='s'?'t':'s')+'\"] pre');if(!other)return;"
    "const gl=pre._gpunbLines||(pre._gpunbLines=[...pre.querySelectorAll('.gl[data-l]')]);"
    "let lo=0,hi=gl.length;while(lo<hi){const m=(lo+hi)>>1;"
    "if(gl[m].offsetTop+gl[m].offsetHeight<=pre.scrollTop)lo=m+1;else hi=m;}"
    "const g=gl[lo];if(!g)return;"
    "const t=other.querySelector('.gl[data-l=\"'+g.dataset.l+'\"]');if(!t)return;"
    "this.set(other,Math.max(0,t.offsetTop-(g.offsetTop-pre.scrollTop)));},"
    "find(inp){const pane=inp.closest('[data-side]'),q=inp.value.toLowerCase();let first=null;"
    "pane.querySelectorAll('.gl').forEach(g=>{const m=q&&g.textContent.toLowerCase()"
    ".includes(q);g.classList.toggle('hit-search',!!m);if(m&&!first)first=g;});"
    "const pre=pane.querySelector('pre');if(first&&pre)"
    "pre.scrollTop=Math.max(0,first.offsetTop-pre.clientHeight/3);"
    "inp.title=q?pane.querySelectorAll('.hit-search').length+' line(s)':'';},"
    "copy(b){const pane=b.closest('[data-side]');const t=[...pane.querySelectorAll('.gl')]"
    ".map(g=>{const c=g.cloneNode(true);c.querySelectorAll('.ln,.note')"
    ".forEach(n=>n.remove());return c.textContent;}).join('\\n');"
    "if(navigator.clipboard)navigator.clipboard.writeText(t).then(()=>{b.textContent='copied';"
    "setTimeout(()=>b.textContent='copy',1200);});}};"
)


def installer(dom_id: str) -> str:
    """An invisible element whose error handler installs PIN_JS and reveals the pinned lines."""
    js = PIN_JS + f"gpunbInsp.reveal(document.getElementById('{dom_id}'))"
    return f'<img src="" alt="" style="display:none" onerror="{render.esc(js)}">'


SYNC_BOX = ('<label title="scrolling one pane scrolls the other to the linked lines">'
            '<input type="checkbox" class="gpunb-sync" checked> sync scroll</label>')
ON_SCROLL = 'onscroll="window.gpunbInsp&amp;&amp;gpunbInsp.sync&amp;&amp;gpunbInsp.sync(this)"'


def tools(label: str, extra: str = "") -> str:
    """A pane's title with its search box and copy button (and `extra` controls)."""
    return (f'<div class="gpunb-tools"><b>{render.esc(label)}</b>'
            '<input type="search" placeholder="search" aria-label="search" '
            'oninput="window.gpunbInsp&amp;&amp;gpunbInsp.find(this)">'
            '<button type="button" onclick="window.gpunbInsp&amp;&amp;gpunbInsp.copy(this)">'
            f"copy</button>{extra}</div>")


def link_rules(dom_id: str, source_lines: Iterable[int]) -> str:
    """CSS: hovering source line L highlights its target lines, and hovering a target line L's."""
    rules = []
    for line in source_lines:
        a = f'[data-l="{line}"]'
        rules.append(f"#{dom_id}:has(.s{a}:hover) .t{a},#{dom_id}:has(.t{a}:hover) .s{a}")
    if not rules:
        return ""
    return "<style>" + ",".join(rules) + f"{{background:{HOVER}}}</style>"


def split_view(dom_id: str, source: str, first_line: int, target_text: str, language: str,
               mapping: dict, selected_source: int | None = None,
               notes: dict[int, str] | None = None) -> str:
    """Source (left) and target code (right); `mapping` is python line -> [target lines];
    `notes` annotates source lines (the SASS view's instruction and live-register counts)."""
    # an inlined callee's instruction is listed under its own line and its call line: the
    # reverse link goes to the most specific (fewest targets) of them
    inverse = {t: s for s, targets in sorted(mapping.items(), key=lambda i: -len(i[1]))
               for t in targets}
    selected_targets = mapping.get(selected_source, []) if selected_source is not None else []
    left = render.code_block(source, "python", first_line=first_line, line_class="s",
                             line_attrs={line: f'data-l="{line}"' for line in mapping},
                             selected=[selected_source] if selected_source else [],
                             notes=notes, pre_attrs=ON_SCROLL)
    right = render.code_block(target_text, language, line_class="t",
                              line_attrs={t: f'data-l="{s}"' for t, s in inverse.items()},
                              selected=selected_targets, pre_attrs=ON_SCROLL)
    title = {"ptx": "PTX", "sass": "SASS"}.get(language, language)
    return (f'<div id="{dom_id}" class="gpunb-split" '
            f'onclick="window.gpunbInsp&amp;&amp;gpunbInsp.pin(event,this)">'
            f'<div data-side="s">{tools("Python")}{left}</div>'
            f'<div data-side="t">{tools(title, SYNC_BOX)}{right}</div>{installer(dom_id)}</div>'
            + link_rules(dom_id, mapping))


def excerpt(target_text: str, lines: list[int], language: str) -> str:
    """Only the given target lines (e.g. the PTX of one source line), in order, numbered."""
    all_lines = target_text.splitlines()
    picked = [n for n in sorted(set(lines)) if 1 <= n <= len(all_lines)]
    if not picked:
        return '<span class="muted">no code for this line</span>'
    rows = []
    highlighted = render.highlight_lines(target_text, language)
    for n in picked:
        rows.append(f'<span class="gl sel"><span class="ln">{n}</span>{highlighted[n - 1]}'
                    f"</span>")
    return f'<pre class="gpunb-code">{"".join(rows)}</pre>'
