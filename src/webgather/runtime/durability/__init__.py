"""What survives a node: checkpoints of its buckets in the shared store (``checkpoint``), a dead
node's buckets recovered from its disk (``recovery``) or from the store (``restore``), and the loss
report when neither could (``losses``). Below the member; knows the bucket keeper only by a protocol.
"""
