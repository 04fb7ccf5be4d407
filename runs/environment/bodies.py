"""Reading a JSON body sent from outside: the one reader of every JSON endpoint (the environment API, the play pages).

``read_json_object(request)`` returns the body as one JSON object, or raises ``BodyRefused``: a
4xx status with a message saying what to send instead, before anything is written or counted.

- At most ``EEGAB_ENV_MAX_BODY_BYTES`` (64 KB): a longer declared ``Content-Length`` is refused
  unread, and a chunked body (no ``Content-Length``) is read up to one byte past the cap (413).
  A chunked body is read only from a server that ends the input at the body's end
  (``wsgi.input_terminated``: gunicorn does); any other server's gets 411.
- Not empty (400), of content type ``application/json`` (415).
- UTF-8; nested at most ``MAX_DEPTH`` arrays and objects deep, counted on the text before it is
  parsed (a deep body costs one pass over it, never a parser's recursion); JSON with finite
  numbers only (no ``NaN``, ``Infinity`` or a number too large for a float); strings of Unicode
  text (no lone surrogate escape such as ``"\\ud800"``); an object at the top (400).

Django REST framework reads an empty or chunked body as ``{}`` without asking any parser, so a
view reads its body with ``read_json_object``, never through ``request.data``; ``JSONObjectParser``
is there for DRF's own reads (its CSRF check reads ``request.POST``) and refuses what the reader does.
"""
from __future__ import annotations

import json
import math
import re
from functools import wraps
from itertools import accumulate

from django.conf import settings
from django.http import JsonResponse
from rest_framework.exceptions import APIException
from rest_framework.parsers import BaseParser

MEDIA_TYPE = "application/json"
#: The deepest nesting of arrays and objects a body may have (an action needs four or five).
MAX_DEPTH = 32

# A JSON string, escapes included (the unrolled form matches in one pass, without backtracking).
_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")
_DEPTH_STEP = {"[": 1, "{": 1, "]": -1, "}": -1}
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
# What json.loads returns that is not an object.
_KINDS = {list: "an array", str: "a string", int: "a number", float: "a number", bool: "true or false", type(None): "null"}


class BodyRefused(APIException):
    """A body that is not read: its 4xx status and a message saying what to send instead."""

    def __init__(self, status: int, message: str):
        self.status_code = status
        super().__init__(message)


def read_json_object(request) -> dict:
    """The request's body as one JSON object, read within the limits above; BodyRefused otherwise.

    ``request`` is Django's request or DRF's (which hands ``META`` and ``body`` on to Django's).
    """
    body = _body(request)
    if not body.strip():
        raise BodyRefused(400, "The body is empty; send one JSON object.")
    media_type = request.META.get("CONTENT_TYPE", "").split(";")[0].strip().lower()
    if media_type != MEDIA_TYPE:
        raise BodyRefused(415, f"Send the body as JSON (Content-Type: {MEDIA_TYPE}), not {media_type or 'untyped'}.")
    return parse_json_object(body)


def parse_json_object(body: bytes) -> dict:
    """``body`` parsed as one JSON object within the limits above; BodyRefused (400) otherwise."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise BodyRefused(400, f"The body is not UTF-8 (byte {exc.start}); send JSON in UTF-8.") from None
    if _depth(text) > MAX_DEPTH:
        raise BodyRefused(400, f"The body nests arrays and objects more than {MAX_DEPTH} deep.")
    try:
        value = json.loads(text, parse_constant=_refuse_constant, parse_float=_finite_float)
    except ValueError as exc:
        raise BodyRefused(400, f"The body is not JSON ({exc}); send one JSON object.") from None
    if not isinstance(value, dict):
        raise BodyRefused(400, f"Send one JSON object ({{...}}), not {_KINDS[type(value)]}.")
    if _SURROGATE_ESCAPE.search(text) and not _is_unicode(value):
        raise BodyRefused(400, "The body escapes a lone surrogate (\\ud800-\\udfff): strings must be Unicode text.")
    return value


def _body(request) -> bytes:
    limit = settings.EEGAB_ENV_MAX_BODY_BYTES
    too_large = BodyRefused(413, f"The body is larger than {limit} bytes; send one action at a time.")
    meta = request.META
    declared = meta.get("CONTENT_LENGTH") or ""
    if declared:
        if not declared.isdigit():
            raise BodyRefused(400, "The Content-Length header is not a number.")
        if int(declared) > limit:
            raise too_large
        return request.body
    if "chunked" not in meta.get("HTTP_TRANSFER_ENCODING", "").lower():
        return b""
    if not meta.get("wsgi.input_terminated"):
        raise BodyRefused(411, "Send the body with a Content-Length; this server reads no chunked body.")
    body = meta["wsgi.input"].read(limit + 1)
    if len(body) > limit:
        raise too_large
    return body


def _depth(text: str) -> int:
    """How deep arrays and objects nest in the JSON ``text``: its brackets outside strings, counted in one pass."""
    brackets = _NOT_BRACKET.sub("", _STRING.sub("", text))
    return max(accumulate(map(_DEPTH_STEP.__getitem__, brackets)), default=0)


def _refuse_constant(name: str):
    raise ValueError(f"{name} is not a JSON number")


def _finite_float(text: str) -> float:
    number = float(text)
    if not math.isfinite(number):
        raise ValueError(f"{text} is too large for a number")
    return number


def _is_unicode(value) -> bool:
    try:
        json.dumps(value, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


class JSONObjectParser(BaseParser):
    """DRF's way to the same reader, for DRF's own reads of a body (a view calls ``read_json_object`` itself).

    It takes every content type, so that DRF refuses one with the reader's words too.
    """

    media_type = "*/*"

    def parse(self, stream, media_type=None, parser_context=None):
        return read_json_object(parser_context["request"])


def json_body(view):
    """A Django view taking ``body=``, the request's JSON object; a refused body is answered as JSON ``{"detail"}``."""

    @wraps(view)
    def read(request, *args, **kwargs):
        try:
            body = read_json_object(request)
        except BodyRefused as exc:
            return JsonResponse({"detail": str(exc.detail)}, status=exc.status_code)
        return view(request, *args, body=body, **kwargs)

    return read
