"""tfdist: the node-side programs of the Ansible collection tfdist.cluster (laid down by tfdist.cluster.training_files).

Every file of this folder, and only these, goes to the nodes (the collection's plugins/module_utils/tfdist/): standard
library only, imports relative to the package. tfdist.train is the training program (python -m tfdist.train.job
--help); tfdist._supervisor keeps a task running (python -m tfdist._supervisor --help). On a node, do not edit: the next
deploy rewrites these files.
"""
