"""A page (lab/page.py: a list of blocks) written out as self-contained HTML
(figures as inline SVG, no scripts, no external resources) and as Markdown
(figures as SVG files beside it)."""

from __future__ import annotations

import html
import re
from pathlib import Path

from lab.page import Bullets, Figure, Heading, Page, Para, Table

__all__ = ["Bullets", "Figure", "Heading", "Page", "Para", "Table", "markdown_table", "to_html", "to_markdown"]


def slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def _inline(text: str) -> str:
    """Escaped HTML with `code` and **bold** from the Markdown-ish source."""
    out = html.escape(text, quote=False)
    out = re.sub(r"`([^`]+)`", r"<code>\1</code>", out)
    return re.sub(r"\*\*([^*]+)\*\*", r"<strong>\1</strong>", out)


CSS = """
body{font:15px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;max-width:1180px;margin:2em auto;
 padding:0 1em;color:#1b1b1b}
h1{font-size:1.7em;margin-bottom:.2em}h2{margin-top:2em;border-bottom:1px solid #ccc;padding-bottom:.2em}
h3{margin-top:1.5em}
table{border-collapse:collapse;margin:.6em 0 1.2em;font-size:13px}
th,td{border:1px solid #d0d0d0;padding:3px 7px}th{background:#f2f2f2}
td.num{text-align:right;font-variant-numeric:tabular-nums}
caption{caption-side:top;text-align:left;font-weight:600;padding:.3em 0}
figure{margin:1em 0 2em}figure svg{max-width:100%;height:auto}
figcaption{font-size:13px;color:#444;max-width:60em}
code{background:#f4f4f4;padding:0 3px;border-radius:3px;font-size:90%}
.missing{background:#fff6e0;border-left:4px solid #e0a000;padding:.4em 1em .4em 2em}
.note{color:#444;font-size:14px}
nav ul{columns:2}
"""

_NUMERIC = re.compile(r"^[-+−]?[\d,.]+\s*(%|×)?$|^–$|^-$")


def _svg_body(svg: str) -> str:
    start = svg.find("<svg")
    return svg[start:] if start >= 0 else svg


def to_html(page: Page) -> str:
    parts = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
             '<meta name="viewport" content="width=device-width, initial-scale=1">',
             f"<title>{html.escape(page.title)}</title><style>{CSS}</style></head><body>",
             f"<h1>{_inline(page.title)}</h1>"]
    toc = [b for b in page.blocks if isinstance(b, Heading) and b.level == 2]
    if toc:
        parts.append("<nav><ul>" + "".join(f'<li><a href="#{h.anchor or slug(h.text)}">{_inline(h.text)}</a></li>'
                                          for h in toc) + "</ul></nav>")
    for block in page.blocks:
        if isinstance(block, Heading):
            parts.append(f'<h{block.level} id="{block.anchor or slug(block.text)}">'
                         f"{_inline(block.text)}</h{block.level}>")
        elif isinstance(block, Para):
            cls = f' class="{block.cls}"' if block.cls else ""
            parts.append(f"<p{cls}>{_inline(block.text)}</p>")
        elif isinstance(block, Bullets):
            cls = f' class="{block.cls}"' if block.cls else ""
            parts.append(f"<ul{cls}>" + "".join(f"<li>{_inline(i)}</li>" for i in block.items) + "</ul>")
        elif isinstance(block, Table):
            anchor = f' id="{block.anchor}"' if block.anchor else ""
            rows = ["<tr>" + "".join(f"<th>{_inline(h)}</th>" for h in block.head) + "</tr>"]
            for row in block.rows:
                cells = []
                for i, cell in enumerate(row):
                    tag = "th" if i == 0 else "td"
                    num = ' class="num"' if i and _NUMERIC.match(cell.strip()) else ""
                    cells.append(f"<{tag}{num}>{_inline(cell)}</{tag}>")
                rows.append("<tr>" + "".join(cells) + "</tr>")
            caption = f"<caption>{_inline(block.caption)}</caption>" if block.caption else ""
            parts.append(f"<table{anchor}>{caption}<thead>{rows[0]}</thead><tbody>"
                         + "".join(rows[1:]) + "</tbody></table>")
        elif isinstance(block, Figure):
            parts.append(f'<figure id="fig-{block.stem}">{_svg_body(block.svg)}'
                         f"<figcaption>{_inline(block.caption)}</figcaption></figure>")
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


def _md_cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def to_markdown(page: Page, figure_dir: Path | None, figure_prefix: str) -> str:
    """Figures are written to `figure_dir` and linked as `figure_prefix/stem.svg`."""
    lines = [f"# {page.title}", ""]
    for block in page.blocks:
        if isinstance(block, Heading):
            lines += ["#" * block.level + " " + block.text, ""]
        elif isinstance(block, Para):
            lines += [block.text, ""]
        elif isinstance(block, Bullets):
            lines += [f"- {i}" for i in block.items] + [""]
        elif isinstance(block, Table):
            if block.caption:
                lines += [f"**{block.caption}**", ""]
            lines.append("| " + " | ".join(_md_cell(h) for h in block.head) + " |")
            lines.append("|" + "|".join("---" if i == 0 else "---:" for i in range(len(block.head))) + "|")
            lines += ["| " + " | ".join(_md_cell(c) for c in row) + " |" for row in block.rows]
            lines.append("")
        elif isinstance(block, Figure):
            if figure_dir is not None:
                figure_dir.mkdir(parents=True, exist_ok=True)
                (figure_dir / f"{block.stem}.svg").write_text(block.svg)
            lines += [f"![{block.stem}]({figure_prefix}/{block.stem}.svg)", "", f"*{block.caption}*", ""]
    return "\n".join(lines)


def markdown_table(lines: list[str]) -> Table:
    """A pipe table (as lab.stats.compare writes it) back into a Table."""
    rows = [[c.strip() for c in line.strip().strip("|").split("|")] for line in lines
            if line.strip().startswith("|")]
    body = [r for r in rows[1:] if not all(set(c) <= set("-: ") for c in r)]
    return Table(rows[0], body)
