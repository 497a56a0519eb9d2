module example.invalid/seshat/sdk/go/seshat

go 1.19
