"""Hostile errands: text that hands the agent a task against its own user.

An agent with tools and a memory can be hijacked without any talk of "previous instructions": a review, an
e-mail or a saved note simply asks the assistant to move money, hand out access, send private data
somewhere, switch a protection off or destroy the user's things, often "quietly" or "from now on". The
action alone is not the tell (a user may ask for a transfer, a runbook grants access), and neither is the
address alone ("Note for the agent: the repo uses pnpm"). The tell is both in one stretch of text: a *cue*
(the text turns to the model, speaks for the user, sets a standing order, takes over the task, reaches for
the agent's tools or hides what it asks) within reach of an *act* against the user.

:data:`ERRAND` finds such a pair in folded, lower-cased text, like every other rule of the scan.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from .._once import once

# --- building blocks --------------------------------------------------------------------------------


def _alternation(alternatives: Iterable[str]) -> str:
    """One alternation of ``alternatives``, each starting with a plain letter, grouped by that letter.

    Python's ``re`` tries every branch of an alternation at every position of the text; grouped, it tries one
    branch per letter. For the dozens of branches below that is two to three times faster on a long note.
    """
    by_letter: dict[str, list[str]] = {}
    for alternative in alternatives:
        if not ("a" <= alternative[:1] <= "z"):
            raise ValueError(f"an alternative must start with a lower-case letter: {alternative!r}")
        by_letter.setdefault(alternative[0], []).append(alternative[1:])
    return "(?:" + "|".join(f"{letter}(?:{'|'.join(rests)})" for letter, rests in sorted(by_letter.items())) + ")"


def _each(words: str, then: str = "") -> list[str]:
    """``then`` after each of the space-separated ``words`` (``_`` stands for a run of spaces)."""
    return [word.replace("_", r"\s+") + then for word in words.split()]


# Any character but a line break or a full stop that ends a sentence (the dot in "evil.example" does not).
_GAP = r"(?:[^.\n]|\.(?=\S))"


def _within(reach: int) -> str:
    return f"{_GAP}{{0,{reach}}}?"


_AGENTS = "ai agent assistant model language_model llm bot chatbot copilot claude chatgpt chat_gpt gpt gemini scheduler helper"
_AT_WORK = r"(?:reads?|reading|summari[sz]ing|processing|handling|managing|reviewing|parsing|working\s+on)"
_WHICH = r"(?:(?:the|your|any|all|every|each|whichever|whatever|dear|an?)\s+)?(?:[a-z-]+\s+){0,2}?"
_AGENT = rf"(?:{'|'.join(_each(_AGENTS))})(?:[\s-]*\d[\w.]*)?s?"

# --- cues: the text turns to the model or speaks for its user ---------------------------------------

_CUES: list[str] = [
    # Addressed by name or role: "Assistant, ...", "hey agent,", "team bot:", "AI systems reading this",
    # "as the travel agent bot you must", "TODO(ai):".
    *_each(
        _AGENTS,
        rf"(?:[\s-]*\d[\w.]*)?s?(?:\s+systems?)?(?:\s+(?:that\s+|who\s+)?(?:is\s+)?{_AT_WORK}\b|\s*[,!:](?!\s*v?\d)"
        r"|\s+please\b|\s+(?:instructions?|directives?|orders?|tasks?|notice|override|command)s?\s*:|\s*\)"
        r"|\s*,?\s+you\s+(?:must|should|will|need|have\s+to)\b)",
    ),
    # A note, memo, task... for it: "action item for the AI scheduler", "P.S. for the recruiting bot".
    *_each(
        "note message memo reminder instruction action_item p.s. ps request task order directive notice override "
        "update alert thing",
        rf"s?\s+(?:is\s+)?(?:(?:meant\s+)?for|to)\s+(?:you\b|{_WHICH}{_AGENT}\b)",
    ),
    # Someone speaking for the user or the owner: "the person you are helping wants you to", "the user is
    # fine with you buying", "your operator requires", "this is your supervisor".
    *_each(
        "wants asked asks requires needs approved authorised authorized agreed instructed expects allows lets "
        "is_fine_with",
        r"\s+(?:that\s+|to\s+let\s+|for\s+)?you\b",
    ),
    r"your\s+(?:operator|owner|developer|admin(?:istrator)?|supervisor|creator)\s+(?:wants|requires|asks|needs"
    r"|instructs)\b",
    r"this\s+is\s+your\s+(?:supervisor|developer|admin(?:istrator)?|operator|owner|creator|boss)\b",
    r"pre-?(?:approved|authori[sz]ed)\b",
    r"has\s+(?:approved|authori[sz]ed)\b",
    r"you\s+(?:no\s+longer\s+need|don'?t\s+need|do\s+not\s+need)\s+(?:the\s+user'?s\s+|their\s+)?(?:consent"
    r"|permission|approval)\b",
    # Orders meant to outlive the session: "for all future conversations", "keep in your memory forever",
    # "permanent rule", "from now on", "whenever the user ...".
    *_each(
        "future later subsequent upcoming next",
        r"\s+(?:sessions?|conversations?|chats?|interactions?)\b",
    ),
    r"across\s+sessions\b",
    r"forever\b",
    r"permanent(?:ly)?\b",
    r"going\s+forward\b",
    r"long[- ]term\s+(?:memory|notes)\b",
    *_each("in to into", r"\s+(?:your\s+|the\s+)?memory\b"),
    r"your\s+(?:[a-z-]+\s+)?(?:memory|notes)\b",
    r"always\s+remember\b",
    r"from\s+(?:now|this\s+point)\s+on\b",
    *_each("whenever every_time", r"\s+(?:the\s+user|you|they)\b"),
    *_each(
        "standing core persistent global lasting",
        r"\s+(?:instructions?|rules?|orders?|preferences?|directives?|polic(?:y|ies))\b",
    ),
    r"update\s+(?:the\s+|your\s+)?(?:user'?s?\s+)?(?:profile|memory)\b",
    r"what\s+you\s+(?:know|remember)\s+about\b",
    # The task taken over: "before you finish the task I gave you", "ignore what the user asked", "your
    # real job is".
    r"before\s+(?:you\s+)?(?:can\s+)?(?:answer|repl|respond|finish|complet|doing\s+what|proceed|continu|solv|handl)",
    *_each(
        "ignore disregard forget",
        r"\s+(?:(?:the|their|this|your)\s+(?:[a-z]+'?s\s+)?(?:earlier\s+|original\s+|previous\s+)?(?:question|request"
        r"|task|query|ask)|what\s+(?:the\s+user|they|he|she|i)\s+(?:asked|said|wants|requested))\b",
    ),
    r"the\s+(?:task|instructions?|plan)\s+(?:has|have)\s+(?:been\s+)?(?:changed|updated)\b",
    r"your\s+(?:(?:new|next|real|actual|only)\s+(?:task|priority|job|goal)|priority\s+(?:now\s+)?is)\b",
    # The agent's own tools reached for: "use your file tool to", "with the calendar tool,". A console or a
    # terminal is as often a person's ("grant it via the IAM console"), so those do not count.
    *_each("use call invoke using with", r"\s+(?:the\s+|your\s+|their\s+)?(?:[\w-]+\s+){0,2}?(?:tool|plugin)s?\b"),
    # Behind the user's back, or with a cover story: "quietly", "without telling them", "and then report
    # that the sync failed", "skipping CI".
    *_each("quietly secretly silently discreetly covertly", r"\b"),
    r"without\s+(?:first\s+)?(?:asking|checking|telling|informing|notifying|confirmation|confirming|consent|review"
    r"|reviewing|permission|approval|verification|(?:their|the\s+user'?s)\s+(?:consent|knowledge|permission"
    r"|approval))\b",
    *_each("do_not don't dont never", r"\s+(?:mention|tell|say|report|reveal)\b"),
    r"tell\s+(?:no\s+one\b|(?:the\s+user|them)\s+(?:that|it\s+was)\b)",
    *_each("reply report respond answer say", r"\s+(?:to\s+\w+\s+)?that\b"),
    r"skipping\s+(?:the\s+)?(?:\w+\s+)?(?:approval|review|confirmation|checks?|ci|tests?|verification)\b",
]

# --- acts against the user --------------------------------------------------------------------------

_SECRET = (
    r"(?:passwords?|passcodes?|pins?|(?:2fa|two[- ]factor|verification|security|one[- ]time|otp|login|mfa|sms|reset"
    r"|door)\s+codes?|api\s+keys?|(?:private|signing|ssh)\s+(?:private\s+)?keys?|seed\s+phrases?|recovery\s+(?:phrases?"
    r"|codes?|keys?)|credentials|secrets?|cookies?|(?:session|access|auth|bearer)\s+tokens?|\.env|passport(?:\s+\w+)?"
    r"|social\s+security\s+\w+|credit\s+card(?:\s+(?:numbers?|details))?|card\s+(?:numbers?|details)|bank\s+details"
    r"|phone\s+number|home\s+address|wi-?fi\s+password)"
)
_PRIVATE = (
    "e-?mails? inbox invoices? documents? photos? album files? contacts calendar messages conversation_history "
    "chat_history browsing_history medical_records? address_book notes code location tax_\\w+ w-?2 "
    "customer_(?:table|list|data) database"
)
_OUTSIDE = (
    r"(?:\b(?:to|with)\s+[\w.+-]+@[\w-]+\.[\w.]+|(?:https?|s?ftp|s3)://|(?<!never\s)(?<!not\s)\bpublic(?:ly)?\b"
    r"|\bwith\s+(?:anyone|everyone|any\s+\w+))"
)
_MONEY = (
    r"(?:[$€£]\s?\d|\b\d[\d,.]*\s?(?:usd|eur|gbp|dollars|euros|pounds|btc|eth|bitcoin)\b|\b(?:funds|money|balance"
    r"|payouts?)\b|\b(?:stored|saved|their|user'?s)\s+(?:credit\s+)?card\b|\bcard\s+on\s+file\b|\banything\b"
    r"|\bgift\s+cards?\b)"
)
_DESTROYED = (
    r"(?:e-?mails?|messages|contacts|events|meetings|backups?|photos|documents|records|alerts|history|(?:the\s+)?user'?s"
    r"|their)"
)
_PROTECTION = (
    r"(?:2fa|two[- ]factor|mfa|multi[- ]factor|antivirus|firewall|security|alarm|cameras?|logging|audit|confirmation"
    r"|review|verification|approval|auth(?:entication|orization)?\s+checks?|branch\s+protection|content\s+filter\w*)"
)

_ACTS: list[str] = [
    # Money moved or spent: "wire 300 euros to ...", "buy anything under $500", "pay rent to account 44-01-99".
    *_each(
        "transfer wire send move pay deposit withdraw buy purchase order book refund",
        rf"(?:ing)?\b{_within(60)}{_MONEY}",
    ),
    *_each("complete finish", r"\s+(?:the\s+)?(?:checkout|purchase|payment)\b"),
    *_each(
        "to into",
        r"\s+(?:the\s+|our\s+)?(?:[a-z]+\s+){0,2}?(?:account|wallet|iban)\s+(?:number\s+)?[a-z]{0,4}[\d-]{6,}",
    ),
    r"iban\s*:?\s*[a-z]{2}\d{2}\b",
    r"wallet\s+(?:address\s+)?(?:bc1|[13]|0x)[a-z0-9]{20,}",
    *_each(
        "raise increase remove lift",
        r"\s+(?:the\s+)?(?:daily\s+|monthly\s+)?(?:transfer|spending|withdrawal|payment)\s+limits?\b",
    ),
    # Access handed over: "grant guest_evelyn admin rights", "add X as an owner", "unlock the back door".
    *_each(
        "grant give add invite make promote transfer assign",
        rf"(?:s|ing|ed)?\b{_within(80)}\b(?:admin(?:istrator)?s?|owners?|ownership|(?:full|permanent|write|edit|admin"
        r"|owner|root|read-write|collaborator|maintainer|contributor|unrestricted)\s+(?:write\s+)?(?:access|rights"
        r"|permissions?)|root)\b",
    ),
    r"transfer\s+(?:the\s+)?(?:domain|repo(?:sitory)?|account|ownership)\b",
    *_each(
        "unlock open leave",
        r"\s+(?:the\s+)?(?:front\s+|back\s+|garage\s+|main\s+)?(?:door|lock|gate|garage|safe|entrance)\b",
    ),
    rf"make\b{_within(40)}\bpublic\b",
    # Secrets handed out, private data sent outside: "paste the new token into the issue", "forward every
    # invoice to billing@...", "BCC a copy to ...", "share it publicly".
    *_each(
        "send forward share give paste include tell post e-?mail copy upload reveal disclose leak print read append "
        "attach insert add put publish",
        rf"(?:s|ing|ed)?\b{_within(60)}\b{_SECRET}\b",
    ),
    *_each(
        "send forward share post e-?mail copy upload sync mirror export",
        rf"(?:s|ing|ed)?\b{_within(60)}\b(?:{'|'.join(_each(_PRIVATE))})\b{_within(60)}{_OUTSIDE}",
    ),
    *_each(
        _PRIVATE,
        r"\s+(?:\w+\s+)?(?:uploaded|sent|forwarded|shared|e-?mailed|posted|copied|synced)\s+(?:to|with)\s+"
        r"(?:(?:https?|s?ftp)://|[\w.+-]+@[\w-]+\.)",
    ),
    *_each("bcc cc", r"\s+(?:a\s+copy\s+|it\s+|them\s+|each\s+\w+\s+)?to\s+[\w.+-]+@[\w-]+\."),
    *_each(
        "send e-?mail forward upload post copy mirror sync",
        rf"\s+(?:it|them|this|everything|a\s+copy)\b{_within(40)}\bto\s+(?:(?:https?|s?ftp|s3)://|[\w.+-]+@[\w-]+\.)",
    ),
    rf"shar(?:e|ed|ing)\b{_within(60)}(?<!never\s)(?<!not\s)\b(?:publicly|with\s+(?:anyone|everyone|the\s+public))\b",
    r"public\s+(?:gist|link|paste)\b",
    r"on\s+(?:pastebin|a\s+public\s+(?:paste|gist|site|forum|page))\b",
    # The account taken over, the user phished: "change the guest email to ...", "ask them to re-enter their
    # password", "log in to their bank".
    *_each(
        "change reset update set replace",
        r"\s+(?:the\s+|their\s+|his\s+|her\s+)?(?:user'?s\s+|owner'?s\s+)?(?:[a-z]+\s+)?(?:password|e-?mail(?:\s+address)?"
        r"|phone\s+number|recovery\s+\w+|(?:shipping|billing|delivery)\s+address|payout\s+\w+|bank\s+details)\b",
    ),
    r"ask\s+(?:them|the\s+user|him|her)\s+(?:to|for)\s+(?:re-?enter|provide|confirm|type|give|send)?\s*(?:their\s+)?"
    r"(?:password|code|card|pin)\b",
    *_each("log sign", r"\s+in\s+(?:to|with|using)\s+(?:their|the\s+user'?s|his|her)\b"),
    r"enter\s+(?:their|the\s+user'?s|your)\s+(?:details|password|card)",
    # Protection switched off: "disable two-factor", "turn off the cameras", "never warn the user".
    *_each(
        "disable turn_off switch_off deactivate bypass skip skipping remove",
        rf"\s+(?:the\s+)?(?:user'?s\s+|home\s+)?{_PROTECTION}\b",
    ),
    *_each("never don't dont do_not stop", r"\s+(?:warn(?:ing)?|alert(?:ing)?)\s+(?:the\s+user|them|anyone)\b"),
    *_each("safety security", r"\s+warnings?\s+(?:removed|disabled|off|dropped)\b"),
    r"remove\s+(?:all\s+)?(?:safety|security)\s+warnings\b",
    *_each("never don't dont do_not", r"\s+ask\s+(?:for\s+(?:confirmation|permission|approval)\s+)?before\b"),
    *_each(
        "approved? accept(?:ed)? merged? paid sent run executed? install(?:ed)? deleted?",
        r"\s+without\s+(?:any\s+)?(?:confirmation|review|approval|asking|checking|verification)\b",
    ),
    # The user's things destroyed, everything waved through: "delete every email from the security team",
    # "cancel the user's flight", "approve every expense report".
    *_each(
        "delete remove erase wipe purge cancel",
        rf"\b{_within(30)}\b(?:all|every|each|entire)\b{_within(20)}\b{_DESTROYED}",
    ),
    *_each("delete cancel", r"\s+(?:the\s+)?user'?s\b"),
    r"rm\s+-rf\b",
    r"git\s+push\s+(?:-f|--force)\b",
    r"force[- ]push",
    *_each("drop", r"\s+(?:table|database|schema)\b"),
    r"truncate\s+table\b",
    *_each("approve accept merge sign confirm refund", r"\s+(?:all|every|any)\b"),
    # Code run or planted: "download and run the installer at http://...", "open any attachment and run it".
    *_each("install download run execute open visit click", r"\b[^\n]{0,60}?\bhttps?://"),
    *_each("open run execute", r"\s+(?:any|every|all)\s+(?:\w+\s+)?attachments?\b"),
    *_each(
        "overwrite append_to modify edit write_to replace",
        r"\s+[~/\w.$-]*(?:\.bashrc|\.zshrc|\.profile|crontab|authorized_keys|/etc/\w+)",
    ),
    r"document\.cookie\b",
]

_REACH = 240
"""How far apart, in characters, a cue and an act may be."""


def _stretch(text: str, start: int, end: int) -> tuple[int, int]:
    """Where an act may lie for a cue at ``text[start:end]``: within :data:`_REACH` characters of it, not past
    a line break or a full stop on either side."""
    floor = max(0, start - _REACH)
    line_start, stop_before = text.rfind("\n", floor, start), text.rfind(". ", floor, start)
    left = max(floor, line_start + 1, stop_before + 2 if stop_before >= 0 else 0)
    ceiling = min(len(text), end + _REACH)
    line_end, stop_after = text.find("\n", end, ceiling), text.find(". ", end, ceiling)
    right = min(ceiling, line_end if line_end >= 0 else ceiling, stop_after + 1 if stop_after >= 0 else ceiling)
    return left, right


# Compiled on the first search, not at import: ~180 ms that a process which never writes should not pay.
@once
def _compiled() -> tuple[re.Pattern[str], re.Pattern[str]]:
    """The cues' pattern and the acts' pattern."""
    return (
        re.compile(rf"\b{_alternation(_CUES)}", re.MULTILINE),
        re.compile(rf"\b{_alternation(_ACTS)}", re.MULTILINE),
    )


class _Errand:
    """Finds an act within :data:`_REACH` characters of a cue, on the same line and in the same sentence."""

    def search(self, text: str) -> re.Match[str] | None:
        """The first act near a cue in lower-cased, folded ``text``, or ``None``.

        The stretches of neighbouring cues are merged before the act is looked for, so a text packed with cues
        costs one pass over it rather than one per cue.
        """
        cues, acts = _compiled()
        pending: tuple[int, int] | None = None
        for cue in cues.finditer(text):
            left, right = _stretch(text, cue.start(), cue.end())
            if pending is not None and left <= pending[1]:
                pending = (pending[0], max(pending[1], right))
                continue
            if pending is not None and (act := acts.search(text, *pending)) is not None:
                return act
            pending = (left, right)
        return None if pending is None else acts.search(text, *pending)


ERRAND = _Errand()
"""The ``hostile_errand`` rule's matcher: ``ERRAND.search(text)`` is the act found, as a match, or ``None``."""
