module tfjob-operator/devcluster/pause

go 1.26
