module example.invalid/seshat/sdk/go

go 1.19
