"""The detour upload's file name: where it comes from and what makes it valid (no aiohttp here).

The name is taken from `Content-Disposition` (RFC 6266: `filename*` wins over `filename`),
else from the `filename` query parameter. A valid name is a plain base name of 1-255 ASCII
letters, digits, `.`, `_`, `-`, not starting with a dot, without `..`, ending in `.csv` or
`.txt` (the extension in any case: Windows and Excel write `.CSV`). Everything else is
400 DETOUR_ERROR_INVALID_FILENAME with the reason. We never write the file anywhere; the
rules keep names that are echoed back and logged harmless for any client that stores them.
"""

from __future__ import annotations

import re
from urllib.parse import unquote_to_bytes

from common.errors import InvalidFilename

MAX_LENGTH = 255
EXTENSIONS = (".csv", ".txt")
# re.ASCII: \w would otherwise accept Cyrillic or fullwidth look-alikes.
_ALLOWED = re.compile(r"[A-Za-z0-9._-]+", re.ASCII)
_TOKEN = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")
_EXT_VALUE = re.compile(r"(?P<charset>[A-Za-z0-9!#$%&+^_`{}~-]+)'(?P<lang>[A-Za-z0-9-]*)'(?P<value>.*)", re.DOTALL)
_CHARSETS = {"utf-8": "utf-8", "iso-8859-1": "latin-1"}
PARAMETER = "filename"


def shown(name: str) -> str:
    """The name as it may appear in a message: escaped (no control characters) and short."""
    return ascii(name[:80]) + ("…" if len(name) > 80 else "")


def invalid(reason: str, name: str | None = None) -> InvalidFilename:
    got = f", got {shown(name)}" if name is not None else ""
    return InvalidFilename(f"{reason}{got}", parameter=PARAMETER)


def validate_filename(name: str) -> str:
    """`name` when it is valid; otherwise raises InvalidFilename saying why."""
    if not name:
        raise invalid("must not be empty")
    if len(name) > MAX_LENGTH:
        raise invalid(f"must be at most {MAX_LENGTH} characters long (got {len(name)})")
    if "/" in name or "\\" in name:
        raise invalid("must be a plain file name without path separators", name)
    if any(ord(ch) < 32 or ord(ch) == 127 for ch in name):
        raise invalid("must not contain control characters", name)
    if ".." in name:
        raise invalid("must not contain '..'", name)
    if name.startswith("."):
        raise invalid("must not start with a dot", name)
    if not _ALLOWED.fullmatch(name):
        raise invalid("may contain only ASCII letters, digits, '.', '_' and '-'", name)
    if not name.lower().endswith(EXTENSIONS):
        raise invalid("must end in .csv or .txt", name)
    return name


def file_name(content_disposition: str | None, query_filename: str | None) -> str:
    """The validated name of the upload: Content-Disposition first, then `?filename=`."""
    name = disposition_filename(content_disposition) if content_disposition else None
    if name is None:
        name = query_filename
    if name is None:
        raise invalid(
            "is required: send 'Content-Disposition: attachment; filename=\"trips.csv\"' or the filename query parameter"
        )
    return validate_filename(name)


# ---------------------------------------------------------------- Content-Disposition


def disposition_filename(header: str) -> str | None:
    """The file name a Content-Disposition header carries (decoded), None when it names none."""
    params = disposition_params(header)
    if "filename*" in params:
        return decode_ext_value(params["filename*"])
    return params.get("filename")


def disposition_params(header: str) -> dict[str, str]:
    """`type; name=value; name="quoted"` → {name: value}; raises InvalidFilename when malformed."""
    _, _, rest = header.partition(";")
    params: dict[str, str] = {}
    position = 0
    while position < len(rest):
        position = _skip(rest, position, " \t;")
        if position >= len(rest):
            break
        name_match = _TOKEN.match(rest, position)
        if name_match is None:
            raise invalid("the Content-Disposition header cannot be parsed")
        position = _skip(rest, name_match.end(), " \t")
        if position >= len(rest) or rest[position] != "=":
            raise invalid("the Content-Disposition header cannot be parsed")
        value, position = _param_value(rest, _skip(rest, position + 1, " \t"))
        params.setdefault(name_match.group().lower(), value)
    return params


def _skip(text: str, position: int, characters: str) -> int:
    while position < len(text) and text[position] in characters:
        position += 1
    return position


def _param_value(text: str, position: int) -> tuple[str, int]:
    """A quoted string (with backslash escapes) or a bare value up to the next ';'."""
    if position < len(text) and text[position] == '"':
        chars: list[str] = []
        position += 1
        while position < len(text) and text[position] != '"':
            if text[position] == "\\" and position + 1 < len(text):
                position += 1
            chars.append(text[position])
            position += 1
        if position >= len(text):
            raise invalid("the Content-Disposition header has an unterminated quoted string")
        return "".join(chars), position + 1
    end = text.find(";", position)
    end = len(text) if end < 0 else end
    return text[position:end].strip(), end


def decode_ext_value(value: str) -> str:
    """RFC 8187 `charset'lang'percent-encoded` (e.g. `UTF-8''trips.csv`) → the text."""
    match = _EXT_VALUE.fullmatch(value)
    if match is None:
        raise invalid("filename* must look like UTF-8''<percent-encoded name>", value)
    codec = _CHARSETS.get(match.group("charset").lower())
    if codec is None:
        raise invalid("filename* must use the UTF-8 or ISO-8859-1 charset", value)
    try:
        return unquote_to_bytes(match.group("value")).decode(codec)
    except UnicodeDecodeError as exc:
        raise invalid(f"filename* is not valid {match.group('charset')}", value) from exc
