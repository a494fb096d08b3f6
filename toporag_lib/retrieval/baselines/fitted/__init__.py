"""Retrievals fitted on a training split, each behind `fitting.fit(config, questions) -> FittedRetriever` and
`FittedRetriever.retrieve(sample, cc, query)`: SubgraphRAG's triple scorer (`subgraphrag`, with its directional
distance encoding `dde`) and GNN-RAG's candidate GNN (`gnnrag`), reading a question as `question.GraphQuestion`
(its entities and training targets from `entities`, shortest paths from `graph_paths`)."""
