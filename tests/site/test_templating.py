"""Organizer Markdown on generated pages and link targets in tables: no address runs script, however spelled; titles
reach MkDocs as HTML text."""

from __future__ import annotations

import html
import re

import pytest
from mkdocs.utils.meta import get_data

from runner.site import templating
from runner.site.pages import href
from runner.site.templating import organizer_markdown


@pytest.mark.parametrize("source", [
    "[x](javascript:alert(1))", "[x](&#106;avascript:alert(1))", "[x](javascript&#58;alert(1))",
    "[x](java&Tab;script:alert(1))", "[x](&#x6A;avascript:alert(1))", "[r]\n\n[r]: &#x6A;avascript:alert(1)",
    "![i](data:image/svg+xml,<svg onload=alert(1)>)", "[x]( JAVASCRIPT:alert(1))",
])
def test_an_organizers_link_the_browser_would_read_as_script_is_dropped(source):
    """Markdown leaves entities for the browser, which decodes them once and ignores tabs in a scheme."""
    rendered = str(organizer_markdown(source))
    assert not re.search(r"\b(href|src)=", rendered), rendered


@pytest.mark.parametrize("source, target", [
    ("[site](https://example.org/a?b=1&c=2)", "https://example.org/a?b=1&amp;c=2"),
    ("[mail](mailto:team@example.org)", "mailto:team@example.org"), ("[page](../data/)", "../data/"),
    ("[entity](&amp;#106;avascript:x)", "&amp;#106;avascript:x"),  # decoded once it is text, not a scheme
])
def test_web_mail_and_relative_links_stay(source, target):
    assert f'href="{target}"' in str(organizer_markdown(source))


def test_a_table_link_target_is_a_web_address_or_nothing():
    assert href("https://example.org/a b|c") == "https://example.org/a%20b%7Cc"
    assert href("javascript:alert(1)") == "" and href("data:text/html,x") == "" and href("//evil.org") == ""


@pytest.mark.parametrize("name", ["Org 🏁 Lab", "<b>Lab</b> & \"Co\"", "Zürich\tLab"])
def test_a_front_matter_title_reaches_mkdocs_as_html_text(name):
    """Read by MkDocs' own front matter reader: an emoji, written as JSON's surrogate pair, made it drop the whole
    front matter (the page's title and `search: exclude`) without a word."""
    meta = get_data(f"---\ntitle: {templating.front_matter_title(name)}\nsearch:\n  exclude: true\n---\n\n# x\n")[1]
    assert meta == {"title": html.escape(name), "search": {"exclude": True}}
