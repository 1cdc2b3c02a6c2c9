module github.com/cudapool/cudapool

go 1.25.0

require (
	github.com/dustin/go-humanize v1.1.0
	github.com/ebitengine/purego v0.11.3
	github.com/stretchr/testify v1.12.1
	go.uber.org/zap v1.28.0
)

require (
	go.uber.org/multierr v1.10.0 // indirect
	go.yaml.in/yaml/v3 v3.0.5 // indirect
)
