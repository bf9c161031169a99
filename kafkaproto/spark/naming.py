"""Topic names for a whole read, gathered on the driver before its tasks start (Kafka 4's clients send topic IDs
only: Produce v13, Fetch v13 on).

A task reads one split of one file (or one ring window), so the answers it decodes may not name the topics its
rows carry: a Metadata answer in another file, or on a connection another task reads, does. The first pass here
reads every file of the read once, decoding only the answers that pair topic IDs with names and the Produce and
Fetch bodies that use IDs (record data stays undecoded), and hands the pairs to every split. It learns which IDs
no pair names, so that the driver says so once, as ``kafkaproto capture`` does.
"""

import logging

from .. import capture
from ..capture.names import NAMING
from ..capture.pcap import read_packets
from ..capture.reader import CaptureReader
from ..messages import ApiKey
from ..uuid import Uuid
from .planning import open_capture

log = logging.getLogger("kafkaproto.spark")

SCANNED = NAMING | {ApiKey.PRODUCE, ApiKey.FETCH}  # what the first pass decodes
_USING_IDS = (ApiKey.PRODUCE, ApiKey.FETCH)


class ReadNames:
    """The pairs a read's traffic carries, after those given (option topicNames: they come first), and the topic
    IDs its Produce and Fetch exchanges use."""

    def __init__(self, given=None):
        self.names = capture.TopicNames(given)
        self.used = set()

    def read(self, exchanges):
        for ex in exchanges:
            if ex.api_key in _USING_IDS:
                self.used.update(topic for topic in ex.topics if type(topic) is Uuid)

    def unnamed(self):
        """The IDs in use that no pair names, as text, sorted."""
        return sorted(str(topic_id) for topic_id in self.used if topic_id not in self.names)


def _packets(files, notes):
    """The packets of files one after another (a ring's files continue each other's connections). What does not
    read is noted and skipped: its own task reports it as a capture error row."""
    for file in files:
        try:
            stream = open_capture(file.location)
        except Exception as e:  # any filesystem's error
            notes.append(f"{file.name}: {e}")
            continue
        try:
            yield from read_packets(stream, file.name)
        except Exception as e:  # a damaged file: the pairs before the damage are kept
            notes.append(f"{file.name}: {e}")
        finally:
            stream.close()


def gather(files, options, given=None, in_ring=False, learned=None, decode=SCANNED):
    """A ReadNames of the files (CaptureFiles; in ring order when in_ring, read then as one capture). ``given``:
    pairs to start from (a {topic id: name} mapping); ``learned``: a ReadNames to add to instead. decode=NAMING
    learns the pairs alone, not the IDs in use (for files whose rows are not read)."""
    found = learned if learned is not None else ReadNames(given)
    readable = [f for f in files if f.error is None]
    notes = []
    groups = [readable] if in_ring else [[f] for f in readable]
    for group in groups:
        if not group:
            continue
        reader = CaptureReader(None, ports=options.ports, name=group[-1].name, decode=decode, names=found.names,
                               packets=_packets(group, notes))
        found.read(reader)
    for note in notes:
        log.debug("kafka-pcap: topic names not gathered from %s", note)
    return found


def ask_cluster(learned, bootstrap):
    """Name what learned leaves unnamed by a live cluster's Metadata (option bootstrapServers), when it does; the
    traffic's own pairs and topicNames come first. A cluster that cannot be asked fails the read, as a bad option."""
    unnamed = learned.unnamed()
    if not bootstrap or not unnamed:
        return learned
    from ..capture.cluster import ClusterError, topic_names_of
    try:
        known = topic_names_of(bootstrap)
    except ClusterError as e:
        raise ValueError(f"option bootstrapServers: {e}") from None
    for text in unnamed:
        topic_id = Uuid.from_string(text)
        if topic_id in known:
            learned.names.add(topic_id, known[topic_id])
    return learned


def say_unnamed(unnamed, where="the read"):
    """The driver's one line about topic IDs left unnamed (None when every ID is named)."""
    if not unnamed:
        return None
    count = len(unnamed)
    shown = ", ".join(unnamed[:5]) + (", ..." if count > 5 else "")
    message = (f"kafka-pcap: {count} topic id{'s' if count > 1 else ''} named by no Metadata answer in {where}, "
               f"and not by option topicNames or bootstrapServers: shown as ids ({shown})")
    log.warning(message)
    return message
