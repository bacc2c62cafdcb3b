"""The public contract of the Matcha match service, as msgspec Structs.

Data only: no rule of the game lives here (see ``service.engine``).
Schema-evolution rules (from msgspec): a new field always gets a default,
a field's type never changes, a tag is never reused.
"""
