"""The synthetic testbed (ours): seeded procedural scene graphs and questions in GQA's official formats, whose
question families need the cells of one dimension each (attribute: 0-cells, path: 1-cells, loop: 2-cells).

- `vocabulary`: names, attributes, relations and families, shared by every version;
- `layout_v1`, `questions_v1`: version 1, the scenes every run before version 2 used;
- `scenes_v2`, `questions_v2`: version 2, the default, whose loop questions need the loop;
- `questions_v3`: version 3, loop questions as counterfactual twins (version 2's scenes, one `on` edge moved);
- `solvers`: the reference solvers (what nodes and paths can answer, and what takes loops);
- `loader`: the files (`sceneGraphs.json`, `questions.json`) and the `QADataset` of any version.
"""
