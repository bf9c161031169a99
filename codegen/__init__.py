"""Generator for kafkaproto message codecs.

Reads Kafka-style JSON message specs, validates them into a model and renders
Cython and pure-Python codecs from jinja2 templates.
"""
