"""The errors the generator raises for bad specs."""

# How to install what the generator needs beyond kafkaproto (jinja2; Cython and setuptools to compile).
CODEGEN_EXTRA = "pip install 'kafkaproto[codegen]' (from a checkout: pip install '.[codegen]')"


class SpecError(Exception):
    """A spec file breaks a rule: names the file, where in it, and the rule.

    ``where`` is a field path such as ``fields[2].Partitions.ErrorCode`` or,
    for malformed JSON, ``line 12, column 5``.
    """

    def __init__(self, file, where, rule):
        self.file = str(file)
        self.where = where
        self.rule = rule
        super().__init__(f"{self.file}: {where}: {rule}" if where else f"{self.file}: {rule}")


class SpecErrors(SpecError):
    """Several broken rules, in one spec or across a spec set; ``errors`` lists each SpecError.

    Its file, where and rule are the first error's.
    """

    def __init__(self, errors):
        self.errors = list(errors)
        first = self.errors[0]
        Exception.__init__(self, "\n".join(str(e) for e in self.errors))
        self.file, self.where, self.rule = first.file, first.where, first.rule


def raise_all(errors):
    """Raise the one error, or SpecErrors for several."""
    if len(errors) == 1:
        raise errors[0]
    raise SpecErrors(errors)
