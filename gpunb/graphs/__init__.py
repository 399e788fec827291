"""gpunb.graph: capture kernel launches and copies into a graph, replay them with one call
(CUDA graphs on a GPU, a list of launches on the CPU target). See graph.py."""

from __future__ import annotations

from gpunb.graphs.graph import Graph, GraphCapture, graph
from gpunb.graphs.table import GraphNode

__all__ = ["Graph", "GraphCapture", "GraphNode", "graph"]
