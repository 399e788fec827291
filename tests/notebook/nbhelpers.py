"""Helpers for reading executed notebooks: the text a cell showed, the saved widget state."""

from __future__ import annotations

import html
import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def outputs_text(cell) -> str:
    """All text a cell showed: streams, text/plain, text/html and error tracebacks.

    A kernel under load may deliver one printed line as several stream messages (nbclient keeps
    each as its own output): consecutive chunks of one stream are joined as they were written,
    never with a newline that the program did not print.
    """
    parts = []
    previous_stream = None
    for out in cell.get("outputs", []):
        if out["output_type"] == "stream":
            if previous_stream == out.get("name") and parts:
                parts[-1] += out["text"]
            else:
                parts.append(out["text"])
            previous_stream = out.get("name")
            continue
        previous_stream = None
        if out["output_type"] == "error":
            parts.append("\n".join(out["traceback"]))
        else:
            data = out.get("data", {})
            parts.append(data.get("text/plain", ""))
            parts.append(data.get("text/html", ""))
    return "\n".join(parts)


def widget_states(nb) -> dict:
    """model_id -> state of every widget the executed notebook saved."""
    state = nb.metadata.get("widgets", {}).get(
        "application/vnd.jupyter.widget-state+json", {}).get("state", {})
    return {model_id: entry["state"] for model_id, entry in state.items()}


def run_cell(ip, code: str):
    """Run one cell as a user would (history on, so execution counts advance)."""
    return ip.run_cell(code, store_history=True)


def html_text(markup: str) -> str:
    """The text a person reads in an HTML fragment (tags and <style> blocks dropped)."""
    markup = re.sub(r"<style>.*?</style>", "", markup, flags=re.S)
    return html.unescape(re.sub(r"<[^>]+>", "", markup))


