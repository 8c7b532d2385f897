"""A server-side apply body is encoded once, by orjson, to the JSON the client would send;
what orjson cannot encode as json would is left to the client's own path."""

from __future__ import annotations

import json

import orjson

from gitgate.apiserver.transport import _encoded


class YamlFloat(float):
    """As ruamel.yaml's round-trip loader types a float."""


def test_an_apply_body_is_the_json_the_client_would_send():
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "web"},
            "data": {"a": "é ✓", "b": "line\nnext"}, "spec": {"replicas": 3, "on": True,
                                                             "ratio": 0.5, "none": None}}
    encoded = _encoded(body)
    assert isinstance(encoded, bytes)
    assert orjson.loads(encoded) == json.loads(json.dumps(body)) == body


def test_keys_that_are_not_strings_are_encoded_as_json_would():
    encoded = _encoded({"data": {1: "one", 2.5: "half"}})
    assert isinstance(encoded, bytes)
    assert orjson.loads(encoded) == json.loads(json.dumps({"data": {1: "one", 2.5: "half"}}))


def test_what_orjson_cannot_encode_goes_the_clients_way():
    body = {"spec": {"ratio": YamlFloat(0.5)}}
    assert _encoded(body) is body
    huge = {"spec": {"n": 2**70}}
    assert _encoded(huge) is huge
