from deadline_audit.cli import main

if __name__ == "__main__":
    main()
