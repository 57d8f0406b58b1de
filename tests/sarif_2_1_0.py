"""What the SARIF 2.1.0 JSON schema states about the objects ``npudoctor lint --format sarif``
writes, and a checker that walks a document by those statements.

Source: the OASIS SARIF TC's schema, Schemata/sarif-schema-2.1.0.json in
https://github.com/oasis-tcs/sarif-spec at commit 0a8091f7d4057e57b6d8d9b56129e5f918747b34
(schema id https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json),
retrieved 2026-12-06.  The schema itself is not vendored: below are its facts for the object
types our output contains (every property name each allows, since each sets
``additionalProperties: false``; required and ``anyOf`` properties; enums; integer minimums;
types; ``uniqueItems``), written down here as our own data.  Properties whose value is an
object type not listed here are checked as objects only.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Tuple

SCHEMA_URL = "https://github.com/oasis-tcs/sarif-spec/blob/0a8091f7d4057e57b6d8d9b56129e5f918747b34/Schemata/sarif-schema-2.1.0.json"
RETRIEVED = "2026-12-06"
LEVELS = ("none", "note", "warning", "error")
# artifactLocation.uri has ``"format": "uri-reference"``: RFC 3986 section 4.1.  Checked here by
# its character set (unreserved, reserved and percent-encoded octets) and by the rule that a
# relative path's first segment has no ":" (section 4.2), which a scheme name satisfies by
# being letters, digits, "+", "-" and "." after a letter.
_URI_REFERENCE = re.compile(
    r"(?:[A-Za-z][A-Za-z0-9+.-]*:|(?![^/?#]*:))"
    r"(?:[A-Za-z0-9\-._~:/?#\[\]@!$&'()*+,;=]|%[0-9A-Fa-f]{2})*"
)


@dataclass(frozen=True)
class Prop:
    """One property's schema: ``kind`` is string, integer, number, boolean, object (a type
    not modelled here), bag (propertyBag), map (object of ``item``), array (of ``item``) or
    the name of a modelled object type."""

    kind: str
    minimum: Optional[float] = None
    maximum: Optional[float] = None
    enum: Tuple[str, ...] = ()
    item: Optional[Prop] = None
    unique: bool = False
    min_items: int = 0
    uri_reference: bool = False


@dataclass(frozen=True)
class ObjectType:
    props: Dict[str, Prop]
    required: Tuple[str, ...] = ()
    any_of: Tuple[Tuple[str, ...], ...] = field(default=())


S = Prop("string")
INT = Prop("integer")
IDX = Prop("integer", minimum=-1)
BAG = Prop("bag")
OBJ = Prop("object")
MMS = Prop("multiformatMessageString")
MSG = Prop("message")
LEVEL = Prop("string", enum=LEVELS)


def arr(item: Prop, unique: bool, min_items: int = 0) -> Prop:
    return Prop("array", item=item, unique=unique, min_items=min_items)


def smap(item: Prop) -> Prop:
    return Prop("map", item=item)


TYPES: Dict[str, ObjectType] = {
    "sarifLog": ObjectType(
        {
            "$schema": S,
            "version": Prop("string", enum=("2.1.0",)),
            "runs": arr(Prop("run"), unique=False),
            "inlineExternalProperties": arr(OBJ, unique=True),
            "properties": BAG,
        },
        required=("version", "runs"),
    ),
    "run": ObjectType(
        {
            "tool": Prop("tool"),
            "invocations": arr(OBJ, unique=False),
            "conversion": OBJ,
            "language": S,
            "versionControlProvenance": arr(OBJ, unique=True),
            "originalUriBaseIds": smap(Prop("artifactLocation")),
            "artifacts": arr(OBJ, unique=True),
            "logicalLocations": arr(OBJ, unique=True),
            "graphs": arr(OBJ, unique=True),
            "results": arr(Prop("result"), unique=False),
            "automationDetails": OBJ,
            "runAggregates": arr(OBJ, unique=True),
            "baselineGuid": S,
            "redactionTokens": arr(S, unique=True),
            "defaultEncoding": S,
            "defaultSourceLanguage": S,
            "newlineSequences": arr(S, unique=True, min_items=1),
            "columnKind": Prop("string", enum=("utf16CodeUnits", "unicodeCodePoints")),
            "externalPropertyFileReferences": OBJ,
            "threadFlowLocations": arr(OBJ, unique=True),
            "taxonomies": arr(Prop("toolComponent"), unique=True),
            "addresses": arr(OBJ, unique=False),
            "translations": arr(Prop("toolComponent"), unique=True),
            "policies": arr(Prop("toolComponent"), unique=True),
            "webRequests": arr(OBJ, unique=True),
            "webResponses": arr(OBJ, unique=True),
            "specialLocations": OBJ,
            "properties": BAG,
        },
        required=("tool",),
    ),
    "tool": ObjectType(
        {
            "driver": Prop("toolComponent"),
            "extensions": arr(Prop("toolComponent"), unique=True),
            "properties": BAG,
        },
        required=("driver",),
    ),
    "toolComponent": ObjectType(
        {
            "guid": S,
            "name": S,
            "organization": S,
            "product": S,
            "productSuite": S,
            "shortDescription": MMS,
            "fullDescription": MMS,
            "fullName": S,
            "version": S,
            "semanticVersion": S,
            "dottedQuadFileVersion": S,
            "releaseDateUtc": S,
            "downloadUri": S,
            "informationUri": S,
            "globalMessageStrings": smap(MMS),
            "notifications": arr(Prop("reportingDescriptor"), unique=True),
            "rules": arr(Prop("reportingDescriptor"), unique=True),
            "taxa": arr(Prop("reportingDescriptor"), unique=True),
            "locations": arr(Prop("artifactLocation"), unique=False),
            "language": S,
            "contents": arr(Prop("string", enum=("localizedData", "nonLocalizedData")), unique=True),
            "isComprehensive": Prop("boolean"),
            "localizedDataSemanticVersion": S,
            "minimumRequiredLocalizedDataSemanticVersion": S,
            "associatedComponent": OBJ,
            "translationMetadata": OBJ,
            "supportedTaxonomies": arr(OBJ, unique=True),
            "properties": BAG,
        },
        required=("name",),
    ),
    "reportingDescriptor": ObjectType(
        {
            "id": S,
            "deprecatedIds": arr(S, unique=True),
            "guid": S,
            "deprecatedGuids": arr(S, unique=True),
            "name": S,
            "deprecatedNames": arr(S, unique=True),
            "shortDescription": MMS,
            "fullDescription": MMS,
            "messageStrings": smap(MMS),
            "defaultConfiguration": Prop("reportingConfiguration"),
            "helpUri": S,
            "help": MMS,
            "relationships": arr(OBJ, unique=True),
            "properties": BAG,
        },
        required=("id",),
    ),
    "multiformatMessageString": ObjectType({"text": S, "markdown": S, "properties": BAG}, required=("text",)),
    "reportingConfiguration": ObjectType(
        {
            "enabled": Prop("boolean"),
            "level": LEVEL,
            "rank": Prop("number", minimum=-1.0, maximum=100.0),
            "parameters": BAG,
            "properties": BAG,
        }
    ),
    "result": ObjectType(
        {
            "ruleId": S,
            "ruleIndex": IDX,
            "rule": OBJ,
            "kind": Prop("string", enum=("notApplicable", "pass", "fail", "review", "open", "informational")),
            "level": LEVEL,
            "message": MSG,
            "analysisTarget": Prop("artifactLocation"),
            "locations": arr(Prop("location"), unique=False),
            "guid": S,
            "correlationGuid": S,
            "occurrenceCount": Prop("integer", minimum=1),
            "partialFingerprints": smap(S),
            "fingerprints": smap(S),
            "stacks": arr(OBJ, unique=True),
            "codeFlows": arr(OBJ, unique=False),
            "graphs": arr(OBJ, unique=True),
            "graphTraversals": arr(OBJ, unique=True),
            "relatedLocations": arr(Prop("location"), unique=True),
            "suppressions": arr(OBJ, unique=True),
            "baselineState": Prop("string", enum=("new", "unchanged", "updated", "absent")),
            "rank": Prop("number", minimum=-1.0, maximum=100.0),
            "attachments": arr(OBJ, unique=True),
            "hostedViewerUri": S,
            "workItemUris": arr(S, unique=True),
            "provenance": OBJ,
            "fixes": arr(OBJ, unique=True),
            "taxa": arr(OBJ, unique=True),
            "webRequest": OBJ,
            "webResponse": OBJ,
            "properties": BAG,
        },
        required=("message",),
    ),
    "message": ObjectType(
        {"text": S, "markdown": S, "id": S, "arguments": arr(S, unique=False), "properties": BAG},
        any_of=(("text",), ("id",)),
    ),
    "location": ObjectType(
        {
            "id": IDX,
            "physicalLocation": Prop("physicalLocation"),
            "logicalLocations": arr(OBJ, unique=True),
            "message": MSG,
            "annotations": arr(Prop("region"), unique=True),
            "relationships": arr(OBJ, unique=True),
            "properties": BAG,
        }
    ),
    "physicalLocation": ObjectType(
        {
            "address": OBJ,
            "artifactLocation": Prop("artifactLocation"),
            "region": Prop("region"),
            "contextRegion": Prop("region"),
            "properties": BAG,
        },
        any_of=(("address",), ("artifactLocation",)),
    ),
    "artifactLocation": ObjectType(
        {"uri": Prop("string", uri_reference=True), "uriBaseId": S, "index": IDX, "description": MSG, "properties": BAG}
    ),
    "region": ObjectType(
        {
            "startLine": Prop("integer", minimum=1),
            "startColumn": Prop("integer", minimum=1),
            "endLine": Prop("integer", minimum=1),
            "endColumn": Prop("integer", minimum=1),
            "charOffset": IDX,
            "charLength": Prop("integer", minimum=0),
            "byteOffset": IDX,
            "byteLength": Prop("integer", minimum=0),
            "snippet": OBJ,
            "message": MSG,
            "sourceLanguage": S,
            "properties": BAG,
        },
        any_of=(("startLine",), ("charOffset",), ("byteOffset",)),
    ),
}


def _check(value: Any, prop: Prop, where: str, out: List[str]) -> None:
    kind = prop.kind
    if kind in TYPES:
        _check_object(value, kind, where, out)
    elif kind == "string":
        if not isinstance(value, str):
            out.append(f"{where}: not a string")
        elif prop.enum and value not in prop.enum:
            out.append(f"{where}: {value!r} not one of {list(prop.enum)}")
        elif prop.uri_reference and not _URI_REFERENCE.fullmatch(value):
            out.append(f"{where}: {value!r} is not a URI reference")
    elif kind in ("integer", "number"):
        ok = isinstance(value, int) if kind == "integer" else isinstance(value, (int, float))
        if isinstance(value, bool) or not ok:
            out.append(f"{where}: not an {kind}" if kind == "integer" else f"{where}: not a number")
            return
        if prop.minimum is not None and value < prop.minimum:
            out.append(f"{where}: {value} below the minimum {prop.minimum:g}")
        if prop.maximum is not None and value > prop.maximum:
            out.append(f"{where}: {value} above the maximum {prop.maximum:g}")
    elif kind == "boolean":
        if not isinstance(value, bool):
            out.append(f"{where}: not a boolean")
    elif kind in ("object", "bag"):
        if not isinstance(value, dict):
            out.append(f"{where}: not an object")
    elif kind == "map":
        if not isinstance(value, dict):
            out.append(f"{where}: not an object")
            return
        assert prop.item is not None
        for key, sub in value.items():
            _check(sub, prop.item, f"{where}.{key}", out)
    elif kind == "array":
        if not isinstance(value, list):
            out.append(f"{where}: not an array")
            return
        if len(value) < prop.min_items:
            out.append(f"{where}: fewer than {prop.min_items} items")
        if prop.unique:
            seen = [json.dumps(v, sort_keys=True) for v in value]
            if len(set(seen)) != len(seen):
                out.append(f"{where}: items not unique")
        assert prop.item is not None
        for i, sub in enumerate(value):
            _check(sub, prop.item, f"{where}[{i}]", out)
    else:  # pragma: no cover - a typo in the tables above
        raise ValueError(kind)


def _check_object(value: Any, name: str, where: str, out: List[str]) -> None:
    if not isinstance(value, dict):
        out.append(f"{where}: not an object ({name})")
        return
    spec = TYPES[name]
    for key in value:
        if key not in spec.props:
            out.append(f"{where}: property {key!r} not allowed in {name}")
    for key in spec.required:
        if key not in value:
            out.append(f"{where}: {name} requires {key!r}")
    if spec.any_of and not any(all(k in value for k in group) for group in spec.any_of):
        out.append(f"{where}: {name} needs one of {[g[0] for g in spec.any_of]}")
    for key, sub in value.items():
        if key in spec.props:
            _check(sub, spec.props[key], f"{where}.{key}", out)


def violations(doc: Any) -> List[str]:
    """Every place where ``doc`` breaks what the schema states, as ``path: reason`` lines."""
    out: List[str] = []
    _check_object(doc, "sarifLog", "$", out)
    return out
