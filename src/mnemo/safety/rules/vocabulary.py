"""Pattern fragments the rule families share: what the model's instructions are called, credential files,
secret variables, network tools, command substitutions, and the literals that gate them."""

#
# Matching runs on folded, lower-cased text (see :func:`mnemo.safety.normalize.fold`); the patterns are
# written in any case and lower-cased when compiled.
# Quantifiers are bounded so a hostile input cannot make a pattern backtrack for long.

# Words that point at the model's own instructions rather than at, say, lint warnings.
ANCHOR = r"(?:previous|prior|above|earlier|preceding|former|original|initial|old|system|developer|your|all)"
INSTRUCTIONS = (
    r"(?:instructions?|directions?|prompts?|rules|directives?|guidelines|guidance|guardrails|commands|orders"
    r"|programming|context|restrictions|policies|messages)"
)
# Files whose contents are credentials; a public key (``.pub``) or ``.env.example`` is not one.
CREDENTIAL_PATH = (
    r"(?:(?:~|\$HOME|\$\{HOME\}|/home/[\w.-]+|/root|/Users/[\w.-]+)/)?"
    r"(?:\.ssh/id_[\w-]+(?!\.pub)\b"
    r"|(?<![\w.])\.env(?![\w.-])"
    r"|\.aws/credentials\b"
    r"|/etc/(?:shadow|gshadow|sudoers)\b"
    r"|\.netrc\b|\.git-credentials\b|\.pgpass\b|\.pypirc\b|\.npmrc\b"
    r"|\.kube/config\b|\.docker/config\.json\b|\.config/gh/hosts\.yml\b"
    r"|\bid_(?:rsa|dsa|ecdsa|ed25519)(?!\.pub)\b)"
)
SECRET_VARIABLE = (
    r"\$\{?[A-Z0-9_]*(?:TOKEN|SECRET|PASSWORD|PASSWD|API_?KEY|ACCESS_KEY|PRIVATE_KEY|CREDENTIALS?)[A-Z0-9_]*\}?"
)
NETWORK_TOOL = (
    r"\b(?:curl|wget|nc|ncat|netcat|socat|telnet|scp|sftp|rsync|ftp"
    r"|Invoke-WebRequest|Invoke-RestMethod|iwr|irm)\b"
)
SUBSTITUTION = r"(?:\$\(|`)"
# Command substitutions that gather something worth stealing (not ``$(date +%F)``).
RECON = (
    rf"{SUBSTITUTION}\s*(?:cat|env|printenv|whoami|id|hostname|uname|history|base64|tar|xxd|head|tail|ls"
    r"|find|pwd|ifconfig|ip\s+a)\b"
)

# Lower-case literals, one of which each rule's match necessarily contains: a plain-text note skips most
# patterns after a few substring tests, which keeps the scan cheap without weakening any rule.
TOOL_WORDS = (
    "curl", "wget", "nc", "netcat", "socat", "telnet", "scp", "sftp", "rsync", "ftp", "invoke-", "iwr", "irm",
)
CREDENTIAL_WORDS = (
    "id_", ".env", ".aws/credentials", "/etc/", ".netrc", ".git-credentials", ".pgpass", ".pypirc", ".npmrc",
    ".kube/config", ".docker/config.json", "gh/hosts.yml",
)
