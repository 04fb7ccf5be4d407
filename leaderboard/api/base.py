"""The base of the API's views: a view's docstring read as its description, cleanly.

DRF shows a view's docstring in the browsable API and in OPTIONS responses. Ours are
reStructuredText, as everywhere in the code, so ``code`` spans become ``<code>`` in HTML and
plain text elsewhere rather than showing their backticks; paragraphs stay paragraphs.
"""
import inspect
import re

from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe
from rest_framework.views import APIView

CODE_SPAN = re.compile(r"``(.+?)``", re.DOTALL)
CODE_HTML = r"<code>\1</code>"


def view_description(docstring: str, *, html: bool = False) -> str | SafeString:
    """``docstring`` without its reStructuredText markup: plain text, or HTML paragraphs with ``<code>``."""
    paragraphs = [" ".join(block.split()) for block in re.split(r"\n\s*\n", inspect.cleandoc(docstring or ""))]
    paragraphs = [paragraph for paragraph in paragraphs if paragraph]
    if not html:
        return "\n\n".join(CODE_SPAN.sub(r"\1", paragraph) for paragraph in paragraphs)
    return mark_safe("".join(f"<p>{CODE_SPAN.sub(CODE_HTML, escape(paragraph))}</p>" for paragraph in paragraphs))


class Endpoint(APIView):
    """An API view whose docstring is its description, as :func:`view_description` gives it."""

    def get_view_description(self, html=False):
        return view_description(self.__class__.__doc__ or "", html=html)
