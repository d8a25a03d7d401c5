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

from collections.abc import Callable
from pathlib import Path
from typing import Any

import jinja2
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


def environment(templates: Path, **filters: Callable[..., Any]) -> jinja2.Environment:
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(templates), autoescape=True, finalize=text,
                             undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True,
                             keep_trailing_newline=True)
    env.filters.update(filters)
    return env
