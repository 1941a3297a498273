"""ARCANE records as plain JSON, the way they travel in graph state (and so in checkpoints).

Why: a pydantic object in LangGraph state is checkpointed by class name and rebuilt on load by
importing that class, which the ``langgraph dev`` server's checkpointer warns about
("Deserializing unregistered type") and will refuse in a future version. So ARCANE graph state
holds each record as ``Model.model_dump(mode="json")`` (:func:`dump`) and nodes validate it back
into the pydantic record (:func:`load`) where they use it.

The pydantic model is the one declaration of a record; its JSON shape is derived, never written
again: a state field is typed ``RecordJSON[Model]``. To a type checker that is a dict tied to its
model (an arc's JSON cannot be loaded as a probe, nor stored where a probe's goes); at run time it
is a plain ``dict[str, Any]`` whose pydantic schema is the model's, so the input and output
schemas Studio shows for a graph are the records' own (``tests/arcane/test_records_json.py``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any, Generic, TypeVar, cast

from pydantic import BaseModel, GetCoreSchemaHandler, GetPydanticSchema
from pydantic_core import CoreSchema, core_schema

M = TypeVar("M", bound=BaseModel)


def _as_json(record: BaseModel) -> dict[str, Any]:
    return record.model_dump(mode="json")


def _schema_of(model: type[BaseModel]) -> GetPydanticSchema:
    """Pydantic's view of ``RecordJSON[model]``: validated as ``model``, held as its JSON."""

    def schema(_source: Any, handler: GetCoreSchemaHandler) -> CoreSchema:
        return core_schema.no_info_after_validator_function(
            _as_json,
            handler(model),
            serialization=core_schema.plain_serializer_function_ser_schema(lambda data: data),
        )

    return GetPydanticSchema(schema)


if TYPE_CHECKING:

    class RecordJSON(dict[str, Any], Generic[M]):
        """The record ``M`` as JSON (``M.model_dump(mode="json")``): a plain dict at run time."""

else:

    class RecordJSON:
        """``RecordJSON[Model]`` is ``dict[str, Any]`` carrying ``Model``'s pydantic schema."""

        def __class_getitem__(cls, model: type[BaseModel]) -> Any:
            return Annotated[dict[str, Any], _schema_of(model)]


def dump(record: M) -> RecordJSON[M]:
    """``record`` as state JSON."""
    return cast("RecordJSON[M]", _as_json(record))


def load(model: type[M], data: RecordJSON[M]) -> M:
    """The record a state field holds, validated back into its model."""
    return model.model_validate(data)
