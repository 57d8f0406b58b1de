"""Redaction: the one place that knows what is secret or personal in npudoctor's outputs.

Two levels:

* :func:`conceal` / :func:`conceal_text` -- **secrets**, applied to *every* output (``check
  --json``, text, triage quotes of log lines): credentials in URLs (``https://user:pw@host``
  → ``https://<redacted>@host``), well-known token shapes (Hugging Face ``hf_…``, GitHub
  ``ghp_…``/``github_pat_…``, AWS ``AKIA…``), and the value of every variable or key named
  like a secret (``*_TOKEN``, ``*_KEY``, ``*_SECRET``, ``*PASSWORD*``, ``*PASSWD*``,
  ``*CREDENTIAL*``, ``*API_KEY*``, ``*ACCESS_KEY*``…): the output says the secret is set,
  never what it is.
* :class:`Redactor` -- **personal data** as well, for outputs that leave the machine
  (``collect`` snapshots, ``check --markdown``): host names (the node's, ``MASTER_ADDR``'s,
  ``hostname``/``fqdn`` keys), user names in paths (``/home/<u>``, ``/Users/<u>``,
  ``/data/<u>``… wherever a known account name is a path component) and network addresses
  become **stable pseudonyms**: the same value gives the same token within a snapshot and,
  with the same site salt (``NPUDOCTOR_REDACT_SALT``), across snapshots -- so ``compare``,
  ``check --from`` and the HCCL address checks (device IP vs rank table) still work.  An
  IPv4 address stays an IPv4 address in ``10.0.0.0/8`` with its ``/24`` grouping and last
  octet kept; an IPv6 address becomes one in ``fd00::/8``.

An IPv4 address is rewritten only where an address is expected, because four dotted numbers
are just as often a version (``opencv-python-headless 4.11.0.86``, ``nvidia-cudnn-cu12
9.1.0.70``) and a version is never rewritten: the value of a key or variable naming an
address (``HCCL_IF_IP``, ``MASTER_ADDR``, ``device_ip``, ``server_id``, ``address``…) and
everything in a network section of the facts (``hccl``: ``hccn.conf``, the rank table, the
interfaces); in free text, an address after such a word (``HCCL_IF_IP=``, ``inet``,
``peer``), in a URL (``http://``, ``user@``), before a port (``:29500``), or one the
facts already showed to be an address.

This module imports no other npudoctor module.
"""

from __future__ import annotations

import itertools
import os
import re
from typing import TYPE_CHECKING

from npudoctor import lazyre
from npudoctor.digest import sha256, sha256_hex

if TYPE_CHECKING:
    from typing import Any, Dict, Iterable, List, Mapping, Optional, Set, Tuple


#: What a concealed secret value becomes.
SECRET = "<redacted>"

#: Names (environment variables, JSON keys, config keys) whose values are secrets.
SECRET_NAME = lazyre.pattern(
    r"(TOKEN|SECRET|PASSWORD|PASSWD|PASSPHRASE|CREDENTIAL|API[_-]?KEY|ACCESS[_-]?KEY|PRIVATE[_-]?KEY|[_-]KEY$|^KEY$|AUTH"
    r"|[_-]PASS$|^PASS$|[_-]PWD$|ACCOUNT[_-]?KEY|COOKIE|SESSION[_-]?ID)",
    re.I,
)

#: Token shapes recognised anywhere in text, whatever they are called.
_TOKENS = lazyre.pattern(
    r"\b(?:hf_[A-Za-z0-9]{20,}"
    r"|gh[pousr]_[A-Za-z0-9]{20,}"
    r"|github_pat_[A-Za-z0-9_]{20,}"
    r"|(?:AKIA|ASIA)[0-9A-Z]{16}"
    r"|xox[abpr]-[A-Za-z0-9-]{10,}"
    r"|sk-[A-Za-z0-9_-]{20,})\b"
)
#: ``scheme://userinfo@`` in a URL (pip index URLs with a password, git remotes with a token):
#: the userinfo runs to the LAST ``@`` of the authority, as pip and urllib split it (a
#: password may hold an ``@``).
_URL_USERINFO = lazyre.pattern(r"\b([A-Za-z][A-Za-z0-9+.-]*://)([^/?#\s'\"<>\\]+)@")
#: HTTP headers whose whole value is a credential: ``Authorization: Bearer …``, ``Cookie: …``.
_HEADER = lazyre.pattern(
    r"(?P<name>(?<![\w-])(?:(?:Proxy-)?Authorization|(?:Set-)?Cookie|X-[A-Za-z-]*(?:Token|Key|Auth)[A-Za-z-]*))"
    r"(?P<sep>[\"']?[ \t]*:[ \t]*)(?P<value>[^\r\n\"'\\]*[^\s\"'\\])",
    re.I,
)
#: A bearer token anywhere (``Bearer eyJ…``): the scheme word kept, the token concealed.
_BEARER = lazyre.pattern(r"\b(Bearer[ \t]+)[A-Za-z0-9._~+/=-]{8,}")
#: A URL query parameter (``?token=…``, ``&sig=…``): concealed when its name is secret-like.
_QUERY = lazyre.pattern(r"([?&;])([A-Za-z0-9_.-]+)=([^&#\s\"'<>\\]+)")
#: Query parameter names that carry a credential though not named like a secret.
_QUERY_SECRETS = {"sig", "signature", "x-amz-signature", "x-goog-signature", "pwd", "pass"}
#: The name and separator of ``NAME=value``, ``NAME: value``, ``"NAME": "value"``, ``--name
#: value``.  A name does not start inside a path or after a dot (``/etc/passwd: line 3`` names
#: a file, not a password), nor after ``?`` or ``&`` (a URL's query: :data:`_QUERY`'s).
_NAME_SEP = lazyre.pattern(r"""(?P<name>(?<![\w./?&-])-{0,2}[A-Za-z_][A-Za-z0-9_.-]*)(?P<sep>["']?[ \t]*[:=][ \t]*)""")
#: The value after a secret-like name: a quoted string (double, single, or with escaped double
#: quotes inside a JSON string), spaces included, or an unquoted word; each written as runs of
#: one character class between escapes, never as an alternation repeated per character (the
#: regex engine keeps a mark per repetition of a group: memory in proportion to the value's
#: length).
_VALUE = lazyre.pattern(
    r"""(?P<value>"[^"\\\n]*(?:\\.[^"\\\n]*)*"|'[^'\n]*'"""
    r'|\\"[^"\\\n]*(?:\\[^"\n][^"\\\n]*)*\\"'
    r"""|(?:[^\s"',;\\]|\\(?!"))[^\s"',;\\]*(?:\\(?!")[^\s"',;\\]*)*)"""
)
#: A name that is a file's (``no-passwd-entry.log:line 1``, ``auth_token.py:42:``): not a key.
_FILE_NAME = lazyre.pattern(r"\.(?:log|txt|out|err|gz|xz|bz2|json|ya?ml|toml|conf|cfg|ini|py|sh)$", re.I)
#: Unquoted words that are an authorization scheme, not the secret (:data:`_HEADER` hides it).
_SCHEMES = {"bearer", "basic", "digest", "token", "negotiate"}
_OPTION = lazyre.pattern(
    r"""(?P<name>(?<![\w-])--[A-Za-z][A-Za-z0-9_-]*)(?P<sep>[ \t]+)(?P<value>[^\s"',;-][^\s"',;]*)"""
)

_IPV4 = lazyre.pattern(r"(?<![\w.])(?:[0-9]{1,3}\.){3}[0-9]{1,3}(?![\w.])")
#: The word (a key, a variable, a field name) right before a value, and the separators
#: between them: ``HCCL_IF_IP=``, ``"device_ip": "``, ``inet ``, ``ipaddr:``.
_WORD_BEFORE = lazyre.pattern(r"([A-Za-z][A-Za-z0-9_.-]*)[\"']?[ \t]*[:=]?[ \t]*[\"'\[(]?$")
_PORT_AFTER = lazyre.pattern(r":[0-9]{1,5}(?![0-9.])")
_IPV6 = lazyre.pattern(r"(?<![\w:])(?:[0-9A-Fa-f]{0,4}:){2,7}[0-9A-Fa-f]{0,4}(?![\w:])")
_HOME_LIKE = lazyre.pattern(r"(?<![\w.-])((?:/[\w.-]+)*?/(?:home|Users|users|homes))/([^/\s:'\"<>]+)")

#: Keys whose string values are host names / user names wholesale.
_HOST_KEYS = {"hostname", "fqdn", "host_name", "nodename"}
_USER_KEYS = {"user", "username", "user_name", "login", "logname"}
#: Variables naming a host (or an address) of the job.
_HOST_VARS = ("MASTER_ADDR", "HCCL_IF_IP", "HOSTNAME", "NODE_NAME", "SLURMD_NODENAME", "KUBERNETES_NODE_NAME")
_USER_VARS = ("USER", "LOGNAME", "SUDO_USER", "USERNAME")
#: Parts of a name (split at ``_``, ``-``, ``.``; lower case) saying its value is an address:
#: ``HCCL_IF_IP``, ``MASTER_ADDR``, ``device_ip``, ``address_0``, ``server_id``, ``inet``.
_ADDRESS_PARTS = {
    "ip",
    "ips",
    "ipaddr",
    "ipv4",
    "ipv6",
    "addr",
    "address",
    "addresses",
    "server",
    "peer",
    "inet",
    "inet6",
    "gateway",
    "gw",
    "nameserver",
    "endpoint",
    "proxy",
}
#: Words before a value in free text saying it is an address: the parts above and a host.
_ADDRESS_WORDS = _ADDRESS_PARTS | {"host", "hosts"}
#: Top-level sections of the facts describing the network (``hccn.conf``, the rank table,
#: the interfaces): every IPv4-looking value in them is an address.
_NETWORK_SECTIONS = {"hccl"}
#: Accounts that say nothing about a person (kept as they are: rules name them).
SYSTEM_ACCOUNTS = {
    "root",
    "hwhiaiuser",
    "hwdmuser",
    "hwbaseuser",
    "nobody",
    "daemon",
    "bin",
    "sys",
    "www-data",
    "user",
    "<user>",
}


#: Names already judged by :func:`_is_secret_name` (keys and variable names repeat across a
#: document; bounded: cleared when it reaches :data:`_NAME_MEMO_MAX` entries).
_SECRET_NAMES: Dict[str, bool] = {}
_NAME_MEMO_MAX = 4096

#: Literal text every match of :data:`_TOKENS` contains (each alternative's fixed prefix);
#: text holding none of them cannot match.
_TOKEN_MARKS = ("hf_", "ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_", "AKIA", "ASIA", "xox", "sk-")


def _is_secret_name(name: str) -> bool:
    known = _SECRET_NAMES.get(name)
    if known is None:
        if len(_SECRET_NAMES) >= _NAME_MEMO_MAX:
            _SECRET_NAMES.clear()
        known = _SECRET_NAMES[name] = bool(SECRET_NAME.search(name))
    return known


def conceal_text(text: str) -> str:
    """``text`` with secrets replaced by :data:`SECRET`: URL credentials, token shapes,
    credential headers (``Authorization``, ``Cookie``), bearer tokens, secret-named query
    parameters and the values of secret-named assignments (quoted values whole).  Never
    raises.

    Each substitution runs only when ``text`` holds the literal characters every match of
    its pattern contains (``@`` for URL credentials, a token prefix, ``--`` for an option,
    ``:`` or ``=`` for an assignment, and for every name-keyed one a word of
    :data:`NAME_WORDS`): skipping it otherwise changes nothing.  A text of
    :data:`LINEWISE` characters or more is concealed line by line (:func:`_by_lines`)."""
    if len(text) >= LINEWISE and "\n" in text:
        return _by_lines(text)
    return _conceal(text)


def _conceal(text: str) -> str:
    """:func:`conceal_text` of one text, every substitution over the whole of it."""
    if not text:
        return text
    out = text
    if "@" in out:
        out = _URL_USERINFO.sub(lambda m: f"{m.group(1)}{SECRET}@", out)
    for mark in _TOKEN_MARKS:
        if mark in out:
            out = _TOKENS.sub(SECRET, out)
            break
    if "Bearer" in out:
        out = _BEARER.sub(lambda m: f"{m.group(1)}{SECRET}", out)
    has_option = "--" in out
    if not has_option and "=" not in out and ":" not in out:
        return out
    if len(out) < LINEWISE:  # (a folded copy of a longer line would double what it holds)
        low = folded(out)
        if not any(word in low for word in NAME_WORDS):
            return out  # no name in it is secret-like: the name-keyed substitutions change nothing
    if ":" in out and _may_hold_header(out):
        out = _HEADER.sub(_header, out)
    if "=" in out and ("?" in out or "&" in out):
        out = _QUERY.sub(_query, out)
    if has_option:
        out = _OPTION.sub(_assignment, out)
    if "=" not in out and ":" not in out:
        return out
    return _assignments(out)


#: Characters of text from which :func:`conceal_text` works line by line.
LINEWISE = 16 << 10
#: Words of which every secret-like name holds one in :func:`folded` form
#: (:data:`SECRET_NAME`'s alternatives; ``sig`` for :data:`_QUERY_SECRETS`), and so every
#: credential header name (``Authorization``, ``Cookie``, ``X-…Token|Key|Auth…``).
NAME_WORDS = ("token", "secret", "pass", "credential", "key", "auth", "pwd", "cookie", "session", "sig")
#: Literal text of which every match of a substitution that is not name-keyed holds one
#: (:data:`_URL_USERINFO`, :data:`_TOKENS`, :data:`_BEARER`).
_MARKS = ("@", "Bearer", *_TOKEN_MARKS)


def folded(text: str) -> str:
    """``text`` in lower case, with the letters that an ignore-case pattern takes for an
    ASCII ``i`` or ``s`` (dotted and dotless I, long s) written as those: a word any case of
    which an ignore-case pattern matches in ``text`` is a substring of ``folded(text)`` (its
    lines stay its lines: no line break is made or lost)."""
    return text.replace("\u0130", "i").replace("\u0131", "i").replace("\u017f", "s").lower()


def _by_lines(text: str) -> str:
    """:func:`_conceal` of each line of ``text`` that holds a word of :data:`NAME_WORDS` or a
    mark of :data:`_MARKS`; the other lines as they are.  The same as :func:`_conceal` of the
    whole text: no match of any substitution crosses a line (none matches a line break; a
    line's start or end is, for their lookarounds, what a line break is), and a line holding
    no word and no mark is one every substitution leaves as it is.  A 120 KB ``check --json``
    document holds a few such lines.  The text is taken in blocks of whole lines of about
    :data:`BLOCK` characters (a block's folded copy and lines are all it holds besides the
    output); a block of one line longer than :data:`BLOCK_MAX` is concealed whole."""
    out: List[str] = []
    start = 0
    while start < len(text):
        cut = text.find("\n", start + BLOCK)
        end = len(text) if cut < 0 else cut + 1
        block = text[start:end]
        out.append(_conceal(block) if len(block) > BLOCK_MAX else _block_by_lines(block))
        del block
        start = end
    return "".join(out)


#: Characters of one block of :func:`_by_lines`, and of its longest block (one line).
BLOCK = 64 << 10
BLOCK_MAX = 1 << 20


def _block_by_lines(text: str) -> str:
    """:func:`_by_lines` of one block."""
    hits: List[int] = []
    for within, needles in ((folded(text), NAME_WORDS), (text, _MARKS)):
        at_lines: List[int] = []
        for needle in needles:
            at = within.find(needle)
            while at >= 0:
                at_lines.append(at)
                at = within.find(needle, at + 1)
        line = prev = 0
        for at in sorted(at_lines):  # the line of each hit: line breaks counted once in all
            line += within.count("\n", prev, at)
            prev = at
            hits.append(line)
    if not hits:
        return text
    lines = text.split("\n")
    for i in set(hits):
        lines[i] = _conceal(lines[i])
    return "\n".join(lines)


def _may_hold_header(text: str) -> bool:
    """Whether :data:`_HEADER` can match: every match holds one of these words (any case)."""
    low = text.lower()
    return "authorization" in low or "cookie" in low or "x-" in low


def _header(m: re.Match[str]) -> str:
    return f"{m.group('name')}{m.group('sep')}{SECRET}"


def _query(m: re.Match[str]) -> str:
    name = m.group(2)
    if m.group(3) == SECRET or not (_is_secret_name(name) or name.lower() in _QUERY_SECRETS):
        return m.group(0)
    return f"{m.group(1)}{name}={SECRET}"


def _assignment(m: re.Match[str]) -> str:
    """``--name value`` (:data:`_OPTION`) with the value concealed when the name is secret-like."""
    value = _concealed_value(m.group("name"), m.group("sep"), m.group("value"))
    return m.group(0) if value is None else f"{m.group('name')}{m.group('sep')}{value}"


def _assignments(text: str) -> str:
    """``text`` with the value of every ``NAME=value``, ``NAME: value`` or ``"NAME": "value"``
    whose NAME is secret-like concealed (:func:`_concealed_value`).  What follows any other
    name is read on as text, never skipped as its value: it may hold an assignment itself
    (``ERROR: HF_TOKEN=…``, ``ERROR: password: …``, ``JAVA_OPTS=-Dpassword=…``).  Each name
    is matched once and a value only after a secret-like name, so the work is linear in the
    text however the assignments nest."""
    pieces: List[str] = []
    last = pos = 0
    while True:
        m = _NAME_SEP.search(text, pos)
        if m is None:
            break
        pos = m.end()
        name = m.group("name")
        if not _is_secret_name(name.lstrip("-")) or _FILE_NAME.search(name):
            continue
        v = _VALUE.match(text, pos)
        if v is None:
            continue
        value = _concealed_value(name, m.group("sep"), v.group(0))
        if value is not None:
            pieces += (text[last:pos], value)
            last = v.end()
        pos = v.end()
    if not pieces:
        return text
    pieces.append(text[last:])
    return "".join(pieces)


def _concealed_value(name: str, sep: str, value: str) -> Optional[str]:
    """What the ``value`` of ``name`` becomes (quotes kept), or ``None`` to keep it: a name
    that is not secret-like, a value already concealed, an authorization scheme word.  A
    JSON key (``"NAME": 3``) keeps a value that is not a string: concealing it would break
    the document, and a number or an object is not a secret's text."""
    if not _is_secret_name(name.lstrip("-")):
        return None
    for quote in ('\\"', '"', "'"):
        if value.startswith(quote) and len(value) >= 2 * len(quote):
            if value[len(quote) : -len(quote)] == SECRET:
                return None
            return f"{quote}{SECRET}{quote}"
    if value == SECRET or value.lower() in _SCHEMES or sep.startswith('"'):
        return None
    return SECRET


def conceal(value: Any, key: str = "") -> Any:
    """``value`` (JSON-able) with every secret concealed (see :func:`conceal_text`): the
    value of a secret-named key becomes :data:`SECRET` (when it is non-empty: an empty one
    stays empty, so "set but empty" still shows), other strings are scanned.

    Copy on write: a dict or list in which nothing changed is returned itself, not copied,
    so concealing a large document holds one copy of what changed, not two of everything
    (callers use the result in place of the value, never both)."""
    if isinstance(value, dict):  # keys too: a PATH entry or a URL may be a key
        changed: Optional[Dict[Any, Any]] = None
        for i, (k, v) in enumerate(value.items()):
            new_key = conceal_text(k) if isinstance(k, str) else k
            new_value = _conceal_item(str(k), v)
            if changed is None and not (_same(new_key, k) and _same(new_value, v)):
                changed = dict(itertools.islice(value.items(), i))
            if changed is not None:
                changed[new_key] = new_value
        return value if changed is None else changed
    if isinstance(value, list):
        items: Optional[List[Any]] = None
        for i, v in enumerate(value):
            new_value = conceal(v, key)
            if items is None and not _same(new_value, v):
                items = value[:i]
            if items is not None:
                items.append(new_value)
        return value if items is None else items
    if isinstance(value, str):
        return conceal_text(value)
    return value


def _same(new: Any, old: Any) -> bool:
    """Whether :func:`conceal` left ``old`` as it was (a string may come back equal but
    rebuilt; a container comes back itself when unchanged)."""
    return new is old or (type(new) is str and type(old) is str and new == old)


def _conceal_item(key: str, value: Any) -> Any:
    if isinstance(value, str) and _is_secret_name(key):
        return SECRET if value else value
    return conceal(value, key)


def pseudonym(text: str, kind: str = "node", salt: str = "") -> str:
    """A stable, non-reversible label ``<kind>-<8 hex>`` for a host or user name.  Without
    a salt the label of a host name is the one :func:`npudoctor.snapshot.pseudonym` always
    gave (``node-…``)."""
    material = (salt + "\0" + text) if salt else text
    return f"{kind}-" + sha256_hex(material.encode("utf-8", "replace"))[:8]


def site_salt(environ: Optional[Mapping[str, str]] = None) -> str:
    """The site salt of pseudonyms: ``NPUDOCTOR_REDACT_SALT`` (empty: none)."""
    env = os.environ if environ is None else environ
    return str(env.get("NPUDOCTOR_REDACT_SALT", ""))


class Redactor:
    """Conceals secrets and replaces personal data by stable pseudonyms (module docstring).

    ``hosts`` and ``users`` are names known to be personal (from the snapshot: see
    :meth:`for_facts`); every occurrence as a word (hosts) or a path component / word
    (users) is replaced.  One redactor is used for a whole snapshot so that the same value
    always gives the same pseudonym."""

    def __init__(self, hosts: Iterable[str] = (), users: Iterable[str] = (), salt: str = "") -> None:
        self.salt = salt
        self.hosts = sorted({h for h in hosts if _worth(h) and not _is_ip(h)}, key=len, reverse=True)
        self.users = sorted({u for u in users if _worth(u) and u.lower() not in SYSTEM_ACCOUNTS}, key=len, reverse=True)
        self._host_re = _words(self.hosts, r"(?<![\w.-])", r"(?![\w-])")
        self._user_re = _words(self.users, r"(?<![\w.-])", r"(?![\w-])")
        self._texts: Dict[Tuple[str, bool], str] = {}
        #: IPv4 addresses the facts showed to be addresses (see :meth:`learn`): one of them
        #: is rewritten wherever it appears in free text.
        self.addresses: Set[str] = set()

    @classmethod
    def for_facts(cls, facts: Mapping[str, Any], node: str = "", salt: Optional[str] = None) -> Redactor:
        """A redactor knowing the host and user names a snapshot's ``facts`` mention: the
        node label, ``host.hostname``/``fqdn``, the judged account, the ``USER``/``HOME``
        and ``MASTER_ADDR``-like variables of the environment facts."""
        hosts: List[str] = [node] if node else []
        users: List[str] = []

        def walk(value: Any, key: str = "") -> None:
            if isinstance(value, dict):
                for k, v in value.items():
                    name = str(k)
                    if isinstance(v, str):
                        low = name.lower()
                        if low in _HOST_KEYS or name in _HOST_VARS:
                            hosts.append(v)
                        elif low in _USER_KEYS or name in _USER_VARS:
                            users.append(v)
                        if _has_home(v):
                            users.extend(m.group(2) for m in _HOME_LIKE.finditer(v))
                    if key == "identity" and name == "name" and isinstance(v, str):
                        users.append(v)
                    walk(v, name)
            elif isinstance(value, list):
                for v in value:
                    walk(v, key)
                    if isinstance(v, str) and _has_home(v):
                        users.extend(m.group(2) for m in _HOME_LIKE.finditer(v))

        walk(facts)
        redactor = cls(hosts, users, site_salt() if salt is None else salt)
        redactor.learn(facts)
        return redactor

    # ------------------------------------------------------------------ pieces
    def host(self, name: str) -> str:
        """The pseudonym of a host name (``node-…``)."""
        return pseudonym(name, "node", self.salt)

    def user(self, name: str) -> str:
        """The pseudonym of a user name (``user-…``)."""
        return pseudonym(name, "user", self.salt)

    def ipv4(self, text: str) -> str:
        """A stable pseudonymous IPv4 address in ``10.0.0.0/8``: the ``/24`` of the address
        maps to one pseudonymous ``/24`` and the last octet is kept.  Loopback, unspecified,
        netmask-like and link-local addresses are kept as they are."""
        import ipaddress  # here, not on every start: only an address to replace needs it

        try:
            addr = ipaddress.IPv4Address(text)
        except ValueError:
            return text
        if addr.is_loopback or addr.is_unspecified or addr.is_link_local or _netmask(text) or addr.is_multicast:
            return text
        octets = text.split(".")
        digest = sha256((self.salt + "\0v4\0" + ".".join(octets[:3])).encode()).digest()
        return f"10.{digest[0]}.{digest[1]}.{int(octets[3])}"

    def ipv6(self, text: str) -> str:
        """A stable pseudonymous IPv6 address in ``fd00::/8`` (loopback and unspecified
        kept); text that is not an IPv6 address is returned as is."""
        import ipaddress

        try:
            addr = ipaddress.IPv6Address(text)
        except ValueError:
            return text
        if addr.is_loopback or addr.is_unspecified:
            return text
        digest = sha256((self.salt + "\0v6\0" + addr.exploded).encode()).hexdigest()
        return str(ipaddress.IPv6Address(int("fd" + digest[:30], 16)))

    def text(self, text: str, address: bool = False) -> str:
        """Free text with secrets concealed and personal data pseudonymised.

        IPv4 addresses are rewritten where an address is expected (module docstring);
        ``address``: the text is the value of an address (every IPv4-looking word in it is
        one).  The result depends only on ``text``, ``address`` and this redactor's names,
        known addresses and salt, so it is remembered per text (a snapshot repeats its
        paths).  Each substitution runs only when ``text`` holds the literal characters
        every match of it contains (a home-like directory, a known name, three dots for
        IPv4, two colons for IPv6)."""
        if not text:
            return text
        memo = (text, address)
        done = self._texts.get(memo)
        if done is not None:
            return done
        out = conceal_text(text)
        if _has_home(out):
            out = _HOME_LIKE.sub(lambda m: f"{m.group(1)}/{self._user_token(m.group(2))}", out)
        if self._user_re is not None and any(u in out for u in self.users):
            out = self._user_re.sub(lambda m: self.user(m.group(0)), out)
        if self._host_re is not None and any(h in out for h in self.hosts):
            out = self._host_re.sub(lambda m: self.host(m.group(0)), out)
        if out.count(".") >= 3:
            out = self._ipv4_in(out, address)
        if out.count(":") >= 2:
            out = _IPV6.sub(lambda m: self.ipv6(m.group(0)), out)
        self._texts[memo] = out
        return out

    def _ipv4_in(self, text: str, address: bool) -> str:
        """``text`` with the IPv4 addresses that are addresses rewritten (:meth:`ipv4`); a
        dotted quad that may be a version is kept.  A quad right after an address in a
        list (``HCCL_IF_IP=10.0.0.1,10.0.0.2``, ``NO_PROXY=10.0.0.0/8,10.1.2.3``) is one too."""
        pieces: List[str] = []
        last = 0
        previous = -1  # end of the last quad judged an address
        for m in _IPV4.finditer(text):
            quad = m.group(0)
            start, end = m.span()
            gap = text[previous:start] if previous >= 0 else ""
            listed = bool(gap) and len(gap) <= 6 and not re.sub(r"^/[0-9]{1,2}", "", gap).strip(" ,;")
            if address or listed or quad in self.addresses or _expects_address(text, start, end):
                pieces.append(text[last:start])
                pieces.append(self.ipv4(quad))
                last = previous = end
        if not pieces:
            return text
        pieces.append(text[last:])
        return "".join(pieces)

    def _user_token(self, name: str) -> str:
        # a glob (``/home/*/Ascend``: where npudoctor looked) names no user
        keep = name.lower() in SYSTEM_ACCOUNTS or name.startswith("user-") or any(c in name for c in "*?[")
        return name if keep else self.user(name)

    def value(self, value: Any, key: str = "", address: bool = False) -> Any:
        """A copy of a JSON-able value redacted throughout, keys like values (a PATH entry
        under ``/home/<user>`` or an address may be a key).  ``address``: ``value`` lies in a
        network section or under a key naming an address (its IPv4-looking strings are
        addresses, and become known ones, see :meth:`text`)."""
        if address or key:
            address = address or _names_address(key)
        if address:
            self._learn(value)
        if isinstance(value, dict):
            out: Dict[Any, Any] = {}
            for key_in, v in value.items():
                name = str(key_in)
                k = self.text(key_in) if isinstance(key_in, str) and _data_key(key_in) else key_in
                low = name.lower()
                if isinstance(v, str) and v and _is_secret_name(name):
                    out[k] = SECRET
                elif isinstance(v, str) and v and low in _HOST_KEYS:
                    out[k] = self.host(v)
                elif (
                    isinstance(v, str)
                    and v
                    and (low in _USER_KEYS or name in _USER_VARS or key == "identity" and name == "name")
                ):
                    out[k] = v if v.lower() in SYSTEM_ACCOUNTS else self.user(v)
                elif isinstance(v, str) and v and name in _HOST_VARS and not _is_ip(v):
                    out[k] = self.host(v)
                else:
                    out[k] = self.value(v, name, address or (not key and name in _NETWORK_SECTIONS))
            return out
        if isinstance(value, list):
            return [self.value(v, key, address) for v in value]
        if isinstance(value, str):
            return self.text(value, address)
        return value

    def learn(self, facts: Any) -> None:
        """Remember the IPv4 addresses of ``facts``' network sections and address-named
        keys, so that free text quoting one of them (a finding's evidence) rewrites it
        wherever it stands (:meth:`value` learns them as it goes)."""

        def walk(value: Any, address: bool, top: bool = False) -> None:
            if isinstance(value, dict):
                for k, v in value.items():
                    name = str(k)
                    walk(v, address or (top and name in _NETWORK_SECTIONS) or _names_address(name))
            elif isinstance(value, list):
                for v in value:
                    walk(v, address)
            elif address and isinstance(value, str):
                self._learn(value)

        walk(facts, False, True)

    def _learn(self, value: Any) -> None:
        if isinstance(value, str) and value.count(".") >= 3:
            for m in _IPV4.finditer(value):
                if m.group(0) not in self.addresses:
                    self.addresses.add(m.group(0))
                    self._texts.clear()  # a remembered text may hold this address


_NAME_SEPARATORS = lazyre.pattern(r"[_.\-]+")
#: Parts of the names :func:`_names_address` was asked about (a snapshot's keys repeat: the
#: same few hundred field names thousands of times); cleared at :data:`_NAME_MEMO_MAX`.
_NAME_PARTS: Dict[str, Tuple[str, ...]] = {}


def _names_address(name: str, words: Set[str] = _ADDRESS_PARTS) -> bool:
    """Whether a key or variable ``name`` names an address (one of its parts is in
    ``words``)."""
    parts = _NAME_PARTS.get(name)
    if parts is None:
        if len(_NAME_PARTS) >= _NAME_MEMO_MAX:
            _NAME_PARTS.clear()
        parts = _NAME_PARTS[name] = tuple(_NAME_SEPARATORS.split(name.lower()))
    return any(p in words for p in parts)


def _expects_address(text: str, start: int, end: int) -> bool:
    """Whether the IPv4-looking ``text[start:end]`` stands where an address is expected: in
    a URL (``://``, ``@``), before a port, or after a word naming an address."""
    before = text[max(0, start - 64) : start]
    if before.endswith(("://", "@")) or _PORT_AFTER.match(text, end):
        return True
    m = _WORD_BEFORE.search(before)
    return m is not None and _names_address(m.group(1), _ADDRESS_WORDS)


def _data_key(key: str) -> bool:
    """Whether a dict key is data (a path, a URL, an address: redacted like a value) rather
    than a field or section name (``cann``, ``HCCL_IF_IP``, ``torch-npu``), which is kept
    even when it equals a host name that is redacted elsewhere."""
    return any(c in key for c in "/@:= ") or key.count(".") >= 3


def _has_home(text: str) -> bool:
    """Whether ``text`` holds a directory :data:`_HOME_LIKE` can match (``/home/``,
    ``/homes/``, ``/Users/``, ``/users/``): without one it cannot match."""
    return "/home" in text or "/Users/" in text or "/users/" in text


def _worth(name: str) -> bool:
    return isinstance(name, str) and len(name.strip()) >= 3 and not name.startswith(("node-", "user-"))


def _is_ip(text: str) -> bool:
    import ipaddress

    try:
        ipaddress.ip_address(text.strip("[]"))
    except ValueError:
        return False
    return True


def _netmask(text: str) -> bool:
    octets = [int(o) for o in text.split(".")]
    bits = "".join(f"{o:08b}" for o in octets)
    return octets[0] == 255 and "01" not in bits


def _words(names: List[str], before: str, after: str) -> Optional[re.Pattern[str]]:
    if not names:
        return None
    return re.compile(before + "(?:" + "|".join(re.escape(n) for n in names) + ")" + after)
