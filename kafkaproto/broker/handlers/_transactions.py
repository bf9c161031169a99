"""What the transaction APIs share: finding the transaction a request names, and the fencing errors."""

from ... import errors


def fenced(version, since):
    """PRODUCER_FENCED for request versions that know it (KIP-588), INVALID_PRODUCER_EPOCH before."""
    return errors.PRODUCER_FENCED if version >= since else errors.INVALID_PRODUCER_EPOCH


def transaction(state, transactional_id, producer_id, epoch, version, fenced_since):
    """(Transaction, NONE) for a request from the transactional id's current producer, else (None, error)."""
    txn = state.transactions.by_id.get(transactional_id)
    if txn is None or txn.producer_id != producer_id:
        return None, errors.INVALID_PRODUCER_ID_MAPPING
    if epoch != txn.epoch:
        return None, fenced(version, fenced_since)
    return txn, errors.NONE
