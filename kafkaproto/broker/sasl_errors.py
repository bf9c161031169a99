"""How a SASL exchange fails (security.py, oauthbearer.py), by what the client is told."""


class AuthenticationError(Exception):
    """The client's credentials or exchange are wrong; str() is safe to send back and log."""


class CredentialsRefused(AuthenticationError):
    """A failure inside the mechanism that Kafka answers with its generic refusal (its SaslException): the client
    learns only that its credentials were refused; reason says why, for the log."""

    def __init__(self, mechanism, reason, during="authentication"):
        super().__init__(f"Authentication failed during {during} due to invalid credentials with SASL mechanism "
                         f"{mechanism}")
        self.mechanism, self.reason = mechanism, reason


class ExchangeAborted(AuthenticationError):
    """An exchange Kafka's broker ends by closing the connection without an answer (its SASL server threw
    something other than an authentication error, or the token was larger than sasl.server.max.receive.size)."""
