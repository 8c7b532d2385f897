"""Who counts as a gate signer (`gates.signers` names principals, emails or key ids), and what
gitgate.yaml's `verify:` / `gates:` accept: plain data."""

from __future__ import annotations

import pytest

from gitgate.errors import ConfigError
from gitgate.source.config import Provenance, parse_repo_config
from gitgate.source.signatures import Signature, uid_address

SSH = Signature("c" * 40, "G", "SHA256:abcdef", "alice@example.com", trusted=True,
                principals=("alice@example.com",))
PGP = Signature("c" * 40, "G", "1234567890ABCDEF", "Bob <bob@example.com>", trusted=True,
                fingerprints=("0011223344556677889900AA1234567890ABCDEF",
                              "FFEEDDCCBBAA99887766554433221100FFEEDDCC"),
                emails=("bob@example.com",))
# a user id's text names alice, but its one address is mallory's (as gpg shows it: %GS)
MALLORY = Signature("c" * 40, "G", "AAAABBBBCCCCDDDD",
                    "Mallory (<alice@example.com>) <mallory@example.com>", trusted=True,
                    fingerprints=("A" * 24 + "AAAABBBBCCCCDDDD",),
                    emails=("mallory@example.com",))


@pytest.mark.parametrize(("signature", "names", "counts"), [
    (SSH, ("alice@example.com",), True),
    (SSH, ("SHA256:abcdef",), True),
    (SSH, ("bob@example.com",), False),
    (SSH, ("alice",), False),  # a principal is matched whole
    (PGP, ("bob@example.com",), True),
    (PGP, ("bob@EXAMPLE.com",), True),  # a domain in any case
    (PGP, ("Bob@example.com",), False),  # a local part exactly
    (PGP, ("Bob <bob@example.com>",), False),  # a user id's text is never matched
    (MALLORY, ("alice@example.com",), False),
    (MALLORY, ("mallory@example.com",), True),
    (SSH, ("alice@example.com ",), True),
    (PGP, ("0x1234567890abcdef",), True),  # the key id, any case, 0x allowed
    (PGP, ("FFEEDDCCBBAA99887766554433221100FFEEDDCC",), True),  # the primary key's
    (PGP, ("90ABCDEF",), False),  # a short id is too easy to forge
    (PGP, ("Bob",), False),
    (Signature("c" * 40, "E", "1234567890ABCDEF", "Bob <bob@example.com>"),
     ("bob@example.com",), False),  # not verified: never a gate signer
])
def test_a_gate_signer_is_named_by_principal_email_or_long_key_id(signature, names, counts):
    assert signature.by_one_of(names) is counts


@pytest.mark.parametrize(("uid", "address"), [
    ("Bob <bob@example.com>", "bob@example.com"),
    ("bob@example.com", "bob@example.com"),
    ("Mallory (<alice@example.com>) <mallory@example.com>", "mallory@example.com"),
    ('Mallory "<alice@example.com>" <mallory@example.com>', "mallory@example.com"),
    ("Eve <eve@example.com>, alice@example.com", None),  # two addresses: none
    ("<alice@example.com> Mallory <mallory@example.com>", None),  # not an address: none
    ("Mallory <alice@example.com", None),
    ("Just A Name", None),
])
def test_a_user_ids_address_is_parsed_not_searched(uid, address):
    assert uid_address(uid) == address


def test_verify_and_gates_parse_to_one_provenance():
    config = parse_repo_config("verify:\n  allowedSigners: .gitgate/allowed_signers\n"
                               "gates:\n  signers: [alice@example.com]\n")
    assert config.provenance == Provenance(".gitgate/allowed_signers", None, True,
                                           ("alice@example.com",))
    assert parse_repo_config("paths: [apps]\n").provenance is None
    keys_only = parse_repo_config("verify: {commits: false, allowedGpgKeys: k.asc}\n")
    assert keys_only.provenance == Provenance(None, "k.asc", False, ())


@pytest.mark.parametrize(("text", "words", "line"), [
    ("paths: [.]\nverify:\n  commits: true\n", "verify needs allowedSigners", 2),
    ("verify:\n  allowedSigners: /etc/keys\n", "must be a file inside the repo", 2),
    ("verify:\n  allowedSigners: k\n  comits: false\n", "unknown field(s) verify.comits", 3),
    ("verify:\n  allowedSigners: k\ngates:\n  signers: []\n", "gates.signers names nobody", 4),
    ("gates:\n  signers: [alice]\n", "verify needs allowedSigners", None),
])
def test_a_bad_verify_names_its_line(text, words, line):
    with pytest.raises(ConfigError) as caught:
        parse_repo_config(text)
    assert words in caught.value.message
    if line is not None:
        assert caught.value.line == line
