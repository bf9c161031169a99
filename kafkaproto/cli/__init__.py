"""The command line's subcommands that are applications of their own (kafkaproto capture)."""
