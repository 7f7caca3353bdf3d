module kvrt-example-prefix-cache

go 1.19

require kvrt v0.3.1

replace kvrt => ../../bindings/go
