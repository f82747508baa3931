"""A small document model written out twice: Markdown (for the repository) and one self-contained HTML page."""

from __future__ import annotations

import base64
import html
import re
from pathlib import Path

STYLE = """
body { font-family: system-ui, sans-serif; max-width: 72rem; margin: 2rem auto; padding: 0 1rem; line-height: 1.45; }
table { border-collapse: collapse; margin: 0.8rem 0; font-size: 0.92rem; }
th, td { border: 1px solid #ccc; padding: 0.25rem 0.55rem; text-align: left; vertical-align: top; }
th { background: #f3f3f3; } code { background: #f3f3f3; padding: 0 0.2rem; }
pre { background: #f3f3f3; padding: 0.6rem; overflow-x: auto; } img { max-width: 100%; }
"""
INLINE = [
    (re.compile(r"\[([^\]]+)\]\(([^)]+)\)"), r'<a href="\2">\1</a>'),
    (re.compile(r"\*\*(.+?)\*\*"), r"<strong>\1</strong>"),
    (re.compile(r"`([^`]+)`"), r"<code>\1</code>"),
]


def inline_html(text: str) -> str:
    """Escaped text with the Markdown the report uses inline: links, **bold** and `code`."""
    out = html.escape(str(text), quote=False)
    for pattern, replacement in INLINE:
        out = pattern.sub(replacement, out)
    return out


class Document:
    """Headings, paragraphs, bullet lists, tables, code blocks and images, in order."""

    def __init__(self):
        self.blocks: list[tuple] = []

    def heading(self, level: int, text: str) -> None:
        self.blocks.append(("heading", level, text))

    def paragraph(self, text: str) -> None:
        self.blocks.append(("paragraph", text))

    def bullets(self, items: list[str]) -> None:
        if items:
            self.blocks.append(("bullets", list(items)))

    def table(self, header: list[str], rows: list[list]) -> None:
        self.blocks.append(("table", header, [[str(cell) for cell in row] for row in rows]))

    def code(self, text: str) -> None:
        self.blocks.append(("code", text))

    def image(self, path: str, alt: str) -> None:
        """`path` relative to the folder the documents are written to."""
        self.blocks.append(("image", path, alt))

    def to_markdown(self) -> str:
        out = []
        for kind, *content in self.blocks:
            if kind == "heading":
                out.append(f"{'#' * content[0]} {content[1]}")
            elif kind == "paragraph":
                out.append(content[0])
            elif kind == "bullets":
                out.append("\n".join(f"- {item}" for item in content[0]))
            elif kind == "table":
                header, rows = content
                cells = [header, ["---"] * len(header), *rows]
                out.append("\n".join("| " + " | ".join(c.replace("|", "\\|") for c in row) + " |" for row in cells))
            elif kind == "code":
                out.append(f"```\n{content[0]}\n```")
            else:
                out.append(f"![{content[1]}]({content[0]})")
        return "\n\n".join(out) + "\n"

    def to_html(self, folder: Path, title: str) -> str:
        """One page with the images embedded, so the file can be sent or opened on its own."""
        out = [f"<!DOCTYPE html>\n<html><head><meta charset='utf-8'><title>{html.escape(title)}</title>",
               f"<style>{STYLE}</style></head><body>"]  # fmt: skip
        for kind, *content in self.blocks:
            if kind == "heading":
                out.append(f"<h{content[0]}>{inline_html(content[1])}</h{content[0]}>")
            elif kind == "paragraph":
                out.append(f"<p>{inline_html(content[0])}</p>")
            elif kind == "bullets":
                out.append("<ul>" + "".join(f"<li>{inline_html(item)}</li>" for item in content[0]) + "</ul>")
            elif kind == "table":
                header, rows = content
                head = "".join(f"<th>{inline_html(c)}</th>" for c in header)
                body = "".join("<tr>" + "".join(f"<td>{inline_html(c)}</td>" for c in row) + "</tr>" for row in rows)
                out.append(f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>")
            elif kind == "code":
                out.append(f"<pre><code>{html.escape(content[0])}</code></pre>")
            else:
                data = base64.b64encode((folder / content[0]).read_bytes()).decode()
                out.append(f"<p><img alt='{html.escape(content[1])}' src='data:image/png;base64,{data}'></p>")
        return "\n".join(out) + "\n</body></html>\n"
