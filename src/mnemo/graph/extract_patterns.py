"""The phrase patterns of the deterministic extractor: what is refused, who a sentence is about, and its type.

Patterns of English, not of particular conversations: a request names the assistant or opens with a verb
of command, a question asks, a hypothetical opens with "if"; a statement worth keeping has the speaker (or
the speaker's own environment: "our staging DB", "the repo") as its subject and says what they are, have,
like, did or plan. Kept apart from :mod:`.extract_rules` so the vocabulary can grow without the logic.
"""

from __future__ import annotations

import re

from .types import MemoryType

# One adverb may stand between a subject and its verb ("I even went", "we currently use").
ADVERB = (
    r"(?:(?:really|also|just|still|even|first|then|once|finally|recently|already|actually|definitely|totally"
    r"|absolutely|usually|always|never|often|sometimes|mostly|only|currently|now|kinda|basically|literally"
    r"|honestly|mainly|generally|no longer) )?"
)
# The things a user's working environment is made of; a sentence whose subject is one is about the user's world.
SYSTEMS = (
    r"(?:repo|repository|codebase|project|app|api|frontend|backend|service|server|db|database|cluster|pipeline|ci"
    r"|build|job|cron|branch|bucket|dashboard|bastion|proxy|load balancer|vpn|network|stack|queue|cache|container"
    r"|image|config|deploy|deployment|domain|monorepo|laptop|machine|box|host|instance|site|website|dns|storage"
    r"|disk|backup|log|test|linter|suite|environment|env|staging|prod|production|secret|credential|creds|key"
    r"|token|registry|wiki|docs|vm|node|worker|runner|cert|certificate|alert|alerting|paging|logging|tracing"
    r"|monitoring|metric|firewall|router|nas|traffic|infra|infrastructure|release|on-call)s?"
)
# What makes an instruction one for good rather than for now.
FOR_GOOD = r"(?:from now on|going forward|in (?:the )?future|by default|for all new|all new|every new)"
# What a team settles on.
CHOICE = r"(?:go with|use|switch|stick with|adopt|pick|standardi[sz]e)"
_VOCABULARY = {"{ADV}": ADVERB, "{SYSTEMS}": SYSTEMS, "{FOR_GOOD}": FOR_GOOD, "{CHOICE}": CHOICE}


def _branches(source: str) -> list[str]:
    """The top-level alternatives of a pattern (split at each ``|`` outside groups and character sets)."""
    found, depth, in_set, escaped, start = [], 0, False, False, 0
    for at, ch in enumerate(source):
        if escaped:
            escaped = False
        elif ch == "\\":
            escaped = True
        elif in_set:
            in_set = ch != "]"
        elif ch in "[()|":
            in_set = ch == "["
            depth += {"(": 1, ")": -1}.get(ch, 0)
            if ch == "|" and depth == 0:
                found.append(source[start:at])
                start = at + 1
    return [*found, source[start:]]


def _compile(*parts: str) -> re.Pattern[str]:
    """One pattern of ``parts``, matched against lower-cased text (case-blind matching is slower in ``re``).

    The word boundary opening every alternative is tested once, before them all: ``re`` otherwise tries each
    alternative at every character, and this makes the patterns three times faster."""
    source = "|".join(parts)
    for name, words in _VOCABULARY.items():
        source = source.replace(name, words)
    branches = _branches(source)
    if all(b.startswith(("\\b", "^")) for b in branches):
        return re.compile(r"\b(?:" + "|".join(b.removeprefix("\\b") for b in branches) + ")")
    return re.compile("|".join(branches))


# Spoken openers and a vocative name ("Yeah Maria,", "Wow, John!", "Thanks!") carry nothing; they are cut so
# the rest of the sentence is judged on its own.
OPENER = re.compile(
    r"^(?:(?:hey|hi|hello|yeah|yes|yep|yup|yah|no|nope|oh|ooh|ok|okay|well|wow|woah|whoa|woo+hoo+|woo+|cool|great"
    r"|nice|awesome|sure|thanks|thank you|haha|lol|hmm+|ugh|so|and|but|also|btw|by the way|actually|honestly"
    r"|anyway|plus|definitely|totally|absolutely|exactly|true|right|aww+|omg|sorry|sounds (?:good|great)|fyi"
    r"|(?:please )?(?:remember|note|keep in mind|be aware)(?= that\b|:)(?: that)?|for the record|just so you know"
    r"|heads up|(?:a |one |quick |small )?(?:correction|update|edit|change of plan)(?=\s*:)"
    r"|(?:as |like )?you know|(?:as |like )?i (?:said|told you))"
    r"\b[\s,!.:-]*(?:(?-i:[A-Z][a-z]+)\b[,!.]?\s+)?)+",
    re.IGNORECASE,
)

# Requests and questions to the assistant, hypotheticals, tentative musing: never a memory.
REFUSED = _compile(
    # a question in all but its mark
    r"^(?:can|could|would|will|do(?! not\b)|does|did|is|are|was|were|should|shall|may|might|what|why|how|where|who"
    r"|which|whose|whom|any|anything|have you|has anyone)\b",
    # the assistant asked to do or to tell something
    r"^(?:please|pls|kindly)\b(?!\s+(?:don'?t|do not|never|always|\w+ (?:me|us) only|stop|quit)\b)",
    r"\bi(?:'d| would) (?:like|love|appreciate) (?:a|an|some|any|help)\b",
    r"^(?:let me|lemme) (?:know|think|see|check|try|ask|paste|show)\b|^here(?:'s| is| are)\b",
    r"^remind (?:me|us) (?:how|what|when|where|why|who|which|whether|if|about)\b",
    r"^(?:add|book|buy|change|check|compare|convert|create|debug|delete|describe|draft|edit|email|explain|find"
    r"|fix|format|generate|get|give|grep|help|install|kill|list|look|make|move|open|order|print|read|recommend"
    r"|refactor|remove|rename|reply|restart|review|rewrite|run|schedule|search|send|set|show|sort|suggest"
    r"|summari[sz]e|tell|text|translate|try|update|write|go ahead|figure out|look up|pull up|walk me|build|deploy"
    r"|test|release|log|commit|push|pull|merge|rebase|lint|clean|migrate|roll ?back|scale|ssh|ping|curl|tail|cat"
    r"|bump|backup|back up|cache|stage)\b(?!.*\b{FOR_GOOD}\b)",
    # hypotheticals and what is not settled
    r"^(?:if|what if|suppose|supposing|imagine|assuming|in case|unless|maybe|perhaps|probably|hopefully|wondering)\b",
    r"\bif (?:i|we) (?:were|had|could|was)\b",
    r"\b(?:i'?m|i am|we'?re|we are|i was|we were) (?:wondering|not sure|unsure)\b|\b(?:i|we) wonder\b",
    r"\bnot sure\b|\bhaven'?t decided\b",
    # a passing state ("disk usage is at 91% right now")
    r"\b(?:right now|at the moment|atm)\b",
    # reactions ("I love that!"), cheering, and anything said to or of the listener ("can you", "your cake")
    r"\bi (?:really |totally |so )?(?:love|like|adore|admire|appreciate) (?:that|this|those|these|it|how"
    r"|the way|hearing|seeing)\b",
    r"\bwe got this\b|\bhop(?:e|ing) for the best\b",
    r"\b(?:you|your|you're|yours|u)\b",
)

# Whom a sentence speaks for: the first person, the speaker's environment, or a dropped "I" of casual speech.
FIRST_PERSON = _compile(r"\b(?:i|me|my|mine|myself|we|us|our|ours|i'm|i've|i'd|i'll|we're|we've|we'll|we'd)\b")
ENVIRONMENT = _compile(r"^(?:(?:the|our|all|all our|all the) (?:[\w.-]+ ){0,3}{SYSTEMS}\b|{SYSTEMS} (?!-)\w)")
# "Never deploy on Fridays", "Don't use f-strings in logs": a standing wish, though it has no "I". Advice to
# the other speaker ("don't forget to take breaks when you need to") is not one.
STANDING = _compile(
    r"^(?!.*\byou)(?:please )?(?:don'?t|do not|never|always)\b(?! (?:worry|forget|mind|hesitate|be|give up|stop"
    r"|feel|had|have|been|was|were|did|got|thought|knew|here|there|so|such|a|an|the|is|are|has|\w+ed)\b)",
    r"^let'?s {CHOICE}\b",
    r"^(?!.*\byou)(?:please )?(?:remember|don'?t forget) to\b|^(?:please )?(?:stop|quit) \w+ing\b",
    r"^(?:please )?(?:use|keep|write|name|format|put|prefer|stick to|avoid|add|make|call|label|tag|sign|indent|sort"
    r"|wrap|ask|reply|answer)\b.*\b{FOR_GOOD}\b",
)
DROPPED_SUBJECT = _compile(
    r"^(?:(?:just|finally|recently|still|also) )?(?:been|gonna(?! be\b)|going to(?! be\b)|started|start|finished"
    r"|got|went|lost|joined|moved|bought|won|made|signed|researching|working|trying|planning|thinking|looking"
    r"|hoping|learning|training|saving|volunteering|doing|getting|heading|loving|feeling|had|did|tried)\b",
)

_NATIONALITY = (
    r"(?:american|british|english|scottish|irish|welsh|canadian|mexican|brazilian|argentin(?:e|ian)|chilean"
    r"|colombian|peruvian|venezuelan|cuban|spanish|portuguese|french|german|dutch|belgian|swiss|austrian|italian"
    r"|greek|polish|czech|slovak|hungarian|romanian|bulgarian|serbian|croatian|ukrainian|russian|swedish"
    r"|norwegian|danish|finnish|icelandic|turkish|israeli|lebanese|iranian|egyptian|moroccan|algerian|nigerian"
    r"|kenyan|ghanaian|ethiopian|south african|indian|pakistani|bangladeshi|sri lankan|nepali|chinese|taiwanese"
    r"|japanese|korean|vietnamese|thai|filipino|indonesian|malaysian|singaporean|australian|new zealander)"
)
# Checked in order; the first group whose pattern matches gives the sentence its type.
RULES: tuple[tuple[MemoryType, re.Pattern[str]], ...] = tuple(
    (kind, _compile(*patterns))
    for kind, patterns in (
        (
            MemoryType.TODO,
            (
                r"^remind (?:me|us)\b|^(?:please )?remember to\b|\bdon'?t (?:let me )?forget\b",
                r"\b(?:i|we) (?:really )?(?:need|have|must|got) to\b|\bi(?:'ve| have) got to\b|\bi gotta\b",
                r"\bto-?do\b|\bi should\b",
            ),
        ),
        (
            MemoryType.DECISION,
            (
                r"\b(?:i|we)(?: have|'ve)? (?:decided|chosen)\b",
                r"\b(?:i|we)(?:'ve| have)? (?:standardi[sz]ed|settled|agreed) on\b",
                r"\b(?:i|we) (?:chose|picked|settled on|went with|opted)\b|\blet'?s {CHOICE}\b",
                r"\b(?:we|i)(?:'ll| will) (?:use|go with|switch to|stick with)\b|\bfrom now on\b",
                r"\b(?:team|house|our) rule\b|\bwe (?:never|always|only) (?:deploy|merge|ship|release|push|use|run)\b",
                r"^never (?:deploy|merge|ship|release|push)\b",
            ),
        ),
        (  # conditions
            MemoryType.FACT,
            (
                r"\ballerg(?:ic|y|ies)\b|\bintoleran(?:t|ce)\b|\bdiagnosed\b",
                r"\b(?:celiac|coeliac|diabet(?:es|ic)|asthma|asthmatic|epilep(?:sy|tic)|migraines?|arthritis|adhd"
                r"|autis(?:m|tic)|dyslexi[ac]|alzheimer'?s|dementia|anxiety disorder|depression|insomnia|cancer"
                r"|pregnant|disabled|deaf|blind|colou?r ?blind|left-handed|hard of hearing|wheelchair)\b",
                r"\b(?:can'?t|cannot|can not) (?:eat|drink|have|tolerate|digest)\b",
                r"\b(?:i|we) take \w+ (?:daily|every (?:day|morning|evening|night)|twice|for|at night"
                r"|in the morning)\b|\bon (?:medication|meds|insulin)\b",
            ),
        ),
        (  # diets, fears and standing wishes
            MemoryType.PREFERENCE,
            (
                r"\b(?:i|we)(?:'m| am|'re| are) (?:a )?(?:vegetarian|vegan|pescatarian|teetotal|sober|night owl"
                r"|(?:gluten|dairy|lactose|sugar|nut|meat)[- ]free|keto|kosher|halal|(?:not )?(?:a )?morning person"
                r"|early riser)\b|\bi(?:'m| am) (?:not )?(?:really )?(?:more of )?(?:a|an) \w+ person\b",
                r"^(?:please )?(?:don'?t|do not|never|always) \w+|^(?:please )?(?:stop|quit) \w+ing\b",
                r"\b(?:i|we)(?:'d| would) (?:rather|never)\b|\b(?:i|we) (?:don'?t|do not|never) (?:eat|drink|smoke)\b",
                r"^(?:please )?\w+ (?:me|us) only\b|\bi find\b",
                r"\b(?:works|clicks|suits) (?:\w+ )?(?:better|best) for (?:me|us)\b",
                r"\b(?:better|best|easier|worse) for (?:me|us)\b|\bi(?:'d| would) (?:appreciate|prefer|like) it if\b",
                r"\b(?:i|we)(?:'m| am|'re| are) (?:\w+ )?(?:afraid|scared|terrified|frightened) of\b",
                r"\b(?:could|can)(?:n'?t| ?not| never) live without\b|\b{FOR_GOOD}\b",
            ),
        ),
        (
            MemoryType.IDENTITY,
            (
                r"\bmy name(?:'s| is)\b|^call me\b",
                r"\bi(?: am|'m) (?:a|an)\b(?! (?:bit|little|lot|huge fan|big fan|fan|mix)\b)",
                r"\bi work (?:as|at|for|in|on|with|nights?|night shifts?|shifts|from home|remotely)\b",
                r"\bi(?: am|'m) (?:originally )?from \w|\bi(?: am|'m) (?:based|living|staying) in \w",
                r"\b(?:i|we) {ADV}live (?:in|at|near|on)\b|\bi grew up\b|\bi(?: am|'m) \d+\b",
                r"\bi(?:'m| am) (?:half[- ])?" + _NATIONALITY + r"\b",
                r"\bmy (?:pronouns|job|role|title|email|e-mail|username|user name|handle|phone number|github"
                r"|gitlab)(?: \w+)? (?:is|are)\b",
                r"\bi(?:'m| am) (?:the|our) (?:only|lead|main|sole|senior|new) \w+",
            ),
        ),
        (
            MemoryType.GOAL,
            (
                r"\b(?:i|we) (?:want|hope|plan|intend|aim|wanna) to\b|\b(?:i|we)(?:'d| would) (?:like|love) to\b",
                r"\bmy (?:goal|dream|plan|aim|hope)s? (?:is|are|was)\b|\b(?:a|my|our) dream\b",
                r"\b(?:i|we)(?:'m| am|'re| are) (?:really )?(?:planning|hoping|going|trying|working|saving|training"
                r"|studying|aiming|looking (?:for|into|at)|learning|thinking|keen|determined|gonna|about to"
                r"|getting ready|moving|migrating|switching|starting)\b",
                r"\b(?:gonna|wanna)\b|\bon my (?:list|bucket list|to-?do list)\b",
                r"^(?:planning|hoping|thinking|looking|researching|learning|training|saving)"
                r" (?:to|on|for|about|into)?\b",
                r"\b(?:i|we)(?:'ll| will) (?:\w+ly )?(?:be )?(?:start|keep|try|visit|move|submit|launch|apply|begin"
                r"|continue)",
            ),
        ),
        (
            MemoryType.PREFERENCE,
            (
                r"\b(?:i|we) (?:do )?{ADV}(?:like|love|enjoy|prefer|adore|hate|dislike|can'?t stand|don'?t like"
                r"|don'?t mind|detest)\b",
                r"\bmy (?:favou?rite|fave|fav|go-to|top pick)\b",
                r"\b(?:s|is|are) (?:one of )?my (?:favou?rites?|faves?|top pick|passion)\b",
                r"\bi(?:'m| am) (?:(?:a )?(?:big |huge )?fan|into|passionate|not a fan|all about|obsessed"
                r"|crazy about|keen on)\b|\bi(?:'m| am) not (?:into|a fan)\b",
                r"\bmeans? (?:a lot|everything|so much) to (?:me|us)\b|\b(?:speaks|appeals) to (?:me|us)\b",
                r"\bmy (?:main |favou?rite |biggest |big |true )?(?:hobby|hobbies|passion|escape|outlet)\b",
            ),
        ),
        (
            MemoryType.EVENT,
            (
                r"\b(?:yesterday|last (?:week|month|year|night|weekend|friday|saturday|sunday|monday|tuesday"
                r"|wednesday|thursday|spring|summer|fall|autumn|winter)|this (?:morning|week|weekend|month)|recently"
                r"|ago|today|tonight|tomorrow|(?:next|this coming) (?:week|weekend|month|year|sprint|quarter|monday"
                r"|tuesday|wednesday|thursday|friday|saturday|sunday|spring|summer|fall|autumn|winter))\b",
                r"\b(?:i|we)(?:'m| am|'re| are) (?:flying|driving|travel(?:l)?ing|leaving|visiting|expecting"
                r"|hosting|attending|meeting|taking)\b",
                r"\b(?:i|we) {ADV}(?:went|visited|started|joined|finished|got|took|met|made|moved|bought|adopted|ran"
                r"|won|attended|signed|painted|celebrated|received|graduated|lost|began|launched|switched|migrated"
                r"|rotated|upgraded|released|shipped|quit|sold|donated|married|broke|hurt|had|printed|travel(?:l)?ed"
                r"|relocated"
                r"|flew|tried|learned|learnt|wrote|built|completed|decommissioned|talked|saw|did)\b",
                r"\b(?:i|we)(?:'ve| have) {ADV}(?:\w+ed|been|had|done|seen|written|driven|eaten|taken|given|gone"
                r"|known|grown|flown|won|lost|made|met|read|run|built|bought|brought|taught|sold|told|heard|kept|left"
                r"|found|gotten|started|finished|moved|switched|joined)\b",
                r"\bappointment\b|\b(?:flight|trip|wedding) (?:to|is|on)\b|\b(?:getting|got) married\b",
                r"\bwas (?:decommissioned|shut down|retired|migrated)\b",
            ),
        ),
        (
            MemoryType.FACT,
            (
                r"\b(?:i|we) {ADV}(?:use|have|own|run|work|study|volunteer|teach|play|speak|keep|manage|maintain"
                r"|deploy|host|build|ship|write|rent|drive|ride|rehearse|rehearsed|practice|practise|collect|do"
                r"|lived|grew up|studied|worked|don'?t (?:have|use|own|drink|eat|smoke)|used to)\b",
                r"\b(?:i|we)(?:'m| am|'re| are) (?:using|running|on|not|the only|in|a member)\b",
                r"\b(?:i|we)(?:'ve| have)? got (?:a|an|the|two|three|some|\d)\b",
                r"\bwe(?:'re| are) (?:a|an)\b",
                r"\bmy [\w-]+(?: [\w-]+){0,2} (?:is|are|was|were|has|have|had|gets|got|feels|looks|lives?|works?"
                r"|runs?|uses?|takes?|needs?|expires?|called|named)\b",
                r"\bour [\w-]+(?: [\w-]+){0,3} (?:is|are|was|were|runs?|uses?|lives?|sits?|takes?|has|have|goes|go)\b",
                r"\bour (?:[\w-]+ ){0,2}{SYSTEMS}\b",
                r"\bevery (?:day|morning|evening|night|week|weekend|month|year|monday|tuesday|wednesday|thursday"
                r"|friday|saturday|sunday)\b",
                r"\bi(?:'m| am) (?:\w+ )?(?:new to|familiar with|experienced (?:with|in)|fluent in|good at|bad at"
                r"|comfortable with|proficient in|responsible for|in charge of|part of)\b",
                # the people and animals in someone's life, whatever they are said to do
                r"\bmy (?:wife|husband|partner|spouse|boyfriend|girlfriend|fianc[ée]e?|sister|brother|siblings?|mom"
                r"|mum|mother|dad|father|parents?|son|daughter|kids?|children|family|fam|grandm[ao]|grandmother"
                r"|grandfather|friends?|best friend|boss|manager|colleagues?|coworkers?|team|crew|dogs?|cats?|pets?"
                r"|landlord|roommate|flatmate|neighbou?r|cousin|aunt|uncle|niece|nephew|doctor|dentist|therapist)\b",
            ),
        ),
    )
)
ENVIRONMENT_TYPE = MemoryType.FACT
