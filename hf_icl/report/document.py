"""A small document model written out twice: Markdown (the repository and the docs site) and an HTML page that opens
from the file system (images beside it, links between the report's pages)."""

from __future__ import annotations

import html
import re

STYLE = """
body { font-family: system-ui, sans-serif; max-width: 76rem; margin: 1.5rem auto; padding: 0 1rem; line-height: 1.45;
       color: #1d1d1f; }
nav { border-bottom: 1px solid #ddd; padding-bottom: 0.5rem; margin-bottom: 1rem; }
nav a { margin-right: 1rem; }
table { border-collapse: collapse; margin: 0.8rem 0; font-size: 0.9rem; }
th, td { border: 1px solid #ccc; padding: 0.25rem 0.55rem; text-align: left; vertical-align: top; }
th { background: #f3f3f3; } code { background: #f3f3f3; padding: 0 0.2rem; }
pre { background: #f3f3f3; padding: 0.6rem; overflow-x: auto; } img { max-width: 100%; }
h2 { margin-top: 2rem; border-bottom: 1px solid #eee; }
"""
INLINE = [
    (re.compile(r"\[([^\]]+)\]\(([^)]+)\)"), r'<a href="\2">\1</a>'),
    (re.compile(r"\*\*(.+?)\*\*"), r"<strong>\1</strong>"),
    (re.compile(r"(?<![\w*])\*([^*\s][^*]*?)\*(?![\w*])"), r"<em>\1</em>"),
    (re.compile(r"`([^`]+)`"), r"<code>\1</code>"),
]
# a link to one of the report's own pages (a sibling `.md`, written as `.html` too); links into other folders (a
# study's write-up) keep their `.md`, the file that exists there
MD_LINK = re.compile(r'href="(?![a-z]+://)([^"#/]+)\.md(#[^"]*)?"')


def inline_html(text: str) -> str:
    """Escaped text with the Markdown the report uses inline: links (to `.md` pages become `.html`), **bold**,
    *emphasis* and `code`."""
    out = html.escape(str(text), quote=False)
    for pattern, replacement in INLINE:
        out = pattern.sub(replacement, out)
    return MD_LINK.sub(lambda m: f'href="{m.group(1)}.html{m.group(2) or ""}"', out)


class Document:
    """Headings, paragraphs, bullet lists, tables, code blocks, anchors and images, in order."""

    def __init__(self):
        self.blocks: list[tuple] = []

    def heading(self, level: int, text: str, anchor: str | None = None) -> None:
        self.blocks.append(("heading", level, text, anchor))

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
                level, text, anchor = content
                out.append((f'<a id="{anchor}"></a>\n\n' if anchor else "") + f"{'#' * level} {text}")
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

    def to_html(self, title: str, nav: list[tuple[str, str]] = ()) -> str:
        """One page; `nav` is (label, href) links shown at the top."""
        out = [f"<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'><title>{html.escape(title)}</title>",
               f"<style>{STYLE}</style></head><body>"]  # fmt: skip
        if nav:
            out.append(
                "<nav>" + "".join(f"<a href='{href}'>{html.escape(label)}</a>" for label, href in nav) + "</nav>"
            )
        for kind, *content in self.blocks:
            if kind == "heading":
                level, text, anchor = content
                ident = f" id='{anchor}'" if anchor else ""
                out.append(f"<h{level}{ident}>{inline_html(text)}</h{level}>")
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
                out.append(f"<p><img alt='{html.escape(content[1])}' src='{html.escape(content[0])}'></p>")
        return "\n".join(out) + "\n</body></html>\n"
