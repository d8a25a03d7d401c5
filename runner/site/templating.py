"""How the site's templates show what they are given: the one Jinja environment of every page and report.

Every value a template writes is text unless the template says otherwise. It is escaped for HTML, and
each character that Markdown or the site's extensions give a meaning to (links and images, emphasis,
code, tables, headings, attr_list's `{: ...}`, raw HTML) is written as an HTML entity, so a title such
as `<img src=x onerror=...>`, `[x](javascript:...)` or `{: onclick=...}` shows as the text it is. The
same entities are right in HTML attributes and raw HTML blocks, where the browser decodes them, so one
rule serves every context but code spans and code blocks (which show entities as typed): what goes
there, and what organizers write as Markdown or the code itself writes as Markdown, is marked
`| safe` in the template.
"""

from __future__ import annotations

import html
import json
import xml.etree.ElementTree as etree
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import jinja2
import markdown  # type: ignore[import-untyped]  # it publishes no type information
from markupsafe import Markup

# HTML's own (a `<` also starts Markdown's raw HTML and autolinks), then what Markdown and the site's
# extensions make markup of: \ escapes, ` code, * and _ emphasis, [ ] links and images (neither starts
# without a bracket), { } attr_list's attributes, | table cells.
TEXT = str.maketrans({char: f"&#{ord(char)};" for char in "&<>\"'\\`*_{}[]|"})


def text(value: Any) -> Markup:
    """`value` as text on a page (Markdown or HTML); what is already Markup (`| safe`) as it is."""
    if isinstance(value, Markup):
        return value
    return Markup(str(value).translate(TEXT))


def mkdocs_title(value: Any) -> str:
    """A page's or a navigation entry's title as MkDocs and the theme take it: HTML text. The theme writes
    titles into the page's header as they are, so a name with `<` (an organization's, which anyone may
    propose in a listing) shows as itself, never as markup; `overrides/main.html` escapes <title> again."""
    return html.escape(str(value))


def front_matter_title(value: Any) -> Markup:
    """`title:` in a generated page's front matter: `mkdocs_title`, as a YAML string. Characters as they are:
    JSON's escape of one past U+FFFF is a surrogate pair, which YAML refuses, and MkDocs then drops the whole
    front matter (the page's title, `search: exclude`) without a word."""
    return Markup(json.dumps(mkdocs_title(value), ensure_ascii=False))


LINK_SCHEMES = ("", "http", "https", "mailto")  # what an organizer's Markdown on a generated page may link to


def organizer_markdown(source: str) -> Markup:
    """An organizer's Markdown set in a generated page (a phase's submission_page_markdown) as one line of HTML,
    for a raw HTML block (`<div markdown="0">`): the text keeps its Markdown, but raw HTML in it shows as
    text and links and images go to LINK_SCHEMES only, and the converter writes well-formed HTML from a tree,
    so nothing in it opens or closes the page's own markup. Line breaks become `&#10;`, which the browser reads
    back as line breaks (in code blocks) and as spaces (elsewhere)."""
    converter = markdown.Markdown(extensions=["tables", "fenced_code"])
    converter.preprocessors.deregister("html_block")
    converter.inlinePatterns.deregister("html")
    converter.treeprocessors.register(_SafeLinks(), "safe_links", 5)  # after links are made (inline, 20)
    return Markup(converter.convert(source).replace("\n", "&#10;"))


class _SafeLinks:
    """A tree processor (Python-Markdown calls `run`) that drops each link or image address outside
    LINK_SCHEMES (javascript:, data:, ...)."""

    def run(self, root: etree.Element) -> None:
        for element in root.iter():
            for name in ("href", "src"):
                value = element.get(name)
                # Judged as the browser reads it: Markdown leaves entities (&#106;avascript:) for the browser to
                # decode, once; urlsplit then drops the tabs and newlines the browser ignores in a scheme.
                if value is not None and urlsplit(html.unescape(value).strip()).scheme.lower() not in LINK_SCHEMES:
                    del element.attrib[name]


def environment(templates: Path, **filters: Callable[..., Any]) -> jinja2.Environment:
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(templates), autoescape=True, finalize=text,
                             undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True,
                             keep_trailing_newline=True)
    env.filters.update(filters)
    return env
