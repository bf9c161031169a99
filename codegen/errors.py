"""The one error type the generator raises for bad specs."""


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
