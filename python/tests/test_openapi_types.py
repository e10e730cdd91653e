"""Every field of every TypedDict in ``agent_scheduler.types`` exists in the schema it is held to, with the same
requiredness, and every field of that schema exists in the TypedDict; the routes the client covers take and answer
those schemas. Read from the document the local stack serves (``/v1/openapi.json``)."""

from __future__ import annotations

import sys
import typing
import unittest
from pathlib import Path
from typing import Any

from agent_scheduler import types

from .stack import needs_stack, operator

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
from generate_types import deref, resolve


def is_typed_dict(annotation: Any) -> bool:
    return isinstance(annotation, type) and issubclass(annotation, dict) and hasattr(annotation, "__required_keys__")


@needs_stack
class OpenApiTypesTest(unittest.TestCase):
    document: dict[str, Any]

    @classmethod
    def setUpClass(cls) -> None:
        cls.document = operator().openapi()

    def test_every_typed_dict_matches_its_schema_both_ways(self) -> None:
        for name, pointer in types.OPENAPI_SCHEMAS.items():
            with self.subTest(name):
                typed = getattr(types, name)
                schema = resolve(self.document, pointer)
                fields = set(schema.get("properties", {}))
                self.assertEqual(set(typing.get_type_hints(typed)), fields, f"{name} and {pointer} differ")
                self.assertEqual(set(typed.__required_keys__), set(schema.get("required", [])), name)

    def test_nested_typed_dicts_are_the_schemas_they_name(self) -> None:
        named = {id(resolve(self.document, p)): n for n, p in types.OPENAPI_SCHEMAS.items()}
        for name, pointer in types.OPENAPI_SCHEMAS.items():
            schema = resolve(self.document, pointer)
            for field, annotation in typing.get_type_hints(getattr(types, name)).items():
                inner = typing.get_args(annotation)[0] if typing.get_origin(annotation) is list else annotation
                if not is_typed_dict(inner):
                    continue
                field_schema = deref(self.document, schema["properties"][field])
                if typing.get_origin(annotation) is list:
                    field_schema = deref(self.document, field_schema["items"])
                with self.subTest(f"{name}.{field}"):
                    self.assertEqual(named.get(id(field_schema)), inner.__name__)

    def test_the_covered_routes_take_and_answer_those_schemas(self) -> None:
        paths = self.document["paths"]
        for (method, path), (request, answer) in types.OPENAPI_ROUTES.items():
            with self.subTest(f"{method} {path}"):
                operation = paths[path][method.lower()]
                body = operation.get("requestBody", {}).get("content", {}).get("application/json", {}).get("schema")
                if request is None:
                    self.assertIsNone(body)
                else:
                    self.assertIs(deref(self.document, body), resolve(self.document, types.OPENAPI_SCHEMAS[request]))
                answers = [
                    deref(self.document, r["content"]["application/json"]["schema"])
                    for status, r in operation["responses"].items()
                    if status.startswith("2")
                ]
                target = resolve(self.document, types.OPENAPI_SCHEMAS[answer])
                self.assertTrue(any(a is target for a in answers), f"{method} {path} does not answer {answer}")


if __name__ == "__main__":
    unittest.main()
