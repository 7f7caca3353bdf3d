module kvrt-example-prefix-cache

go 1.19

require kvrt v0.4.1

replace kvrt => ../../bindings/go
